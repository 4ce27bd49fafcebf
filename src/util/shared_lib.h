/* A shared library opened when a command first needs it (dlopen), not by the dynamic loader at
 * every start. Linked normally, OpenBLAS (with gfortran and quadmath) and libmicrohttpd (with
 * gnutls and eight more) were 13 of the 27 libraries every `sailor` process loaded, about 10 ms
 * of CPU each start: most of a `sailor --help`, and paid on every `sailor plan` too, which
 * never multiplies a matrix nor serves HTTP.
 *
 * Each user keeps its own table of function pointers and fills it once with
 * sl_shared_lib_open; the handle is never closed (the symbols stay valid for the process).
 */
#ifndef SL_UTIL_SHARED_LIB_H
#define SL_UTIL_SHARED_LIB_H

#include "util/err.h"

/* One symbol to resolve: its name, and where its address goes (a function pointer, passed as
 * (void **)&fn, the form POSIX gives for dlsym). */
struct sl_shared_symbol {
	const char *name;
	void **slot;
};

/* Opens the first of names (NULL-terminated, e.g. the soname, then the development name) that
 * loads, and resolves count symbols into their slots. SL_ENOTFOUND when no name loads or a symbol
 * is missing: the message names the library, dlerror's reason and install_hint (what to install).
 * On error no slot is written. */
int sl_shared_lib_open(const char *const *names, const struct sl_shared_symbol *symbols, int count,
		       const char *install_hint, struct sl_err *err);

#endif
