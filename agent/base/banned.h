/* SPDX-License-Identifier: MIT */
/*
 * banned.h: libc functions pyprofd code must not call. Each use becomes a
 * compile error naming the function. Included last by compat.h, after the
 * system headers that declare these functions, so their declarations are not
 * disturbed. Use snprintf / memcpy with explicit lengths, strtok_r, gmtime_r,
 * localtime_r and the checked number parsers of base/strnum.h instead.
 * (Raw malloc/free outside base/alloc.c are caught by scripts/check-src.sh.)
 */
#ifndef PYPROFD_BASE_BANNED_H
#define PYPROFD_BASE_BANNED_H

#define PYPROFD_BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(...) PYPROFD_BANNED(strcpy)
#undef strcat
#define strcat(...) PYPROFD_BANNED(strcat)
#undef strncpy
#define strncpy(...) PYPROFD_BANNED(strncpy)
#undef strncat
#define strncat(...) PYPROFD_BANNED(strncat)
#undef sprintf
#define sprintf(...) PYPROFD_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) PYPROFD_BANNED(vsprintf)
#undef strtok
#define strtok(...) PYPROFD_BANNED(strtok)
#undef gmtime
#define gmtime(...) PYPROFD_BANNED(gmtime)
#undef localtime
#define localtime(...) PYPROFD_BANNED(localtime)
#undef ctime
#define ctime(...) PYPROFD_BANNED(ctime)
#undef asctime
#define asctime(...) PYPROFD_BANNED(asctime)
#undef mktemp
#define mktemp(...) PYPROFD_BANNED(mktemp)
#undef atoi
#define atoi(...) PYPROFD_BANNED(atoi)
#undef atol
#define atol(...) PYPROFD_BANNED(atol)

#endif /* PYPROFD_BASE_BANNED_H */
