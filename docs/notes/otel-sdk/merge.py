# SPDX-License-Identifier: MIT
import sys,collections
files=sys.argv[1:]
cols=[];rows=collections.OrderedDict()
for f in files:
    lines=open(f).read().splitlines()
    hdr=lines[0].replace("CPython ","").replace(" (Py_GIL_DISABLED)","t")
    cols.append(hdr)
    for l in lines[1:]:
        k,v=l.rsplit(None,1)
        rows.setdefault(k,{})[hdr]=v
w=max(len(k) for k in rows)
print("| field | "+" | ".join(cols)+" |")
print("|---|"+"---|"*len(cols))
for k,d in rows.items():
    print("| "+k+" | "+" | ".join(d.get(c,"–") for c in cols)+" |")
