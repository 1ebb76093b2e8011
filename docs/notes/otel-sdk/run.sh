#!/bin/bash
# SPDX-License-Identifier: MIT
# usage: run.sh VERSION [--standin]   (VERSION: 3.9 3.10 3.11 3.12 3.13pyenv 3.13 3.14 3.15)
# Starts target.py under that interpreter and reader.py (host python3) against it.
set -u
H=/work/h-sdk
R=$(/work/main/scripts/python-rootfs.sh --print-path)
SDK45=sdkroot/usr/lib/python3/dist-packages
P41=$H/otel-1.41.0/opentelemetry-api/src:$H/otel-1.41.0/opentelemetry-sdk/src:$H/otel-1.41.0/opentelemetry-semantic-conventions/src:$H/shim39
export DURATION=${DURATION:-3} SAMPLE_SECONDS=${SAMPLE_SECONDS:-2}
v=$1; shift
case $v in
3.9) cmd=(env PYTHONPATH=$P41 ~/.pyenv/versions/3.9.18/bin/python3.9 $H/target.py "$@") ;;
3.10) cmd=(env PYTHONPATH=$H/$SDK45 ~/.pyenv/versions/3.10.13/bin/python3.10 $H/target.py "$@") ;;
3.11) cmd=(env PYTHONPATH=$H/$SDK45 /usr/bin/python3.11 $H/target.py "$@") ;;
3.12) cmd=(env PYTHONPATH=$H/$SDK45 ~/.pyenv/versions/3.12.1/bin/python3.12 $H/target.py "$@") ;;
3.13pyenv) cmd=(env PYTHONPATH=$H/$SDK45 ~/.pyenv/versions/3.13.0/bin/python3.13 $H/target.py "$@") ;;
3.13|3.14|3.15) cmd=(unshare -m sh -c "mount --bind $H $R/mnt && exec env PYTHONPATH=/mnt/$SDK45 DURATION=$DURATION chroot $R python$v /mnt/target.py $*") ;;
esac
coproc T { nice "${cmd[@]}" 2>$H/out/target-$v.err; }
read -r line <&"${T[0]}"
echo "$line" | python3 $H/reader.py
wait
