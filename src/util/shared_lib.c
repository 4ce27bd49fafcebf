/* Shared libraries opened on first use (shared_lib.h). */
#include "util/shared_lib.h"

#include <dlfcn.h>
#include <stdio.h>

#define MAX_SYMBOLS 32

int sl_shared_lib_open(const char *const *names, const struct sl_shared_symbol *symbols, int count,
		       const char *install_hint, struct sl_err *err)
{
	if (count > MAX_SYMBOLS)
		return sl_err_set(err, SL_EINPUT, "%s: %d symbols asked, at most %d", names[0], count,
				  MAX_SYMBOLS);
	void *handle = NULL;
	char why[512] = "";
	for (int i = 0; names[i] && !handle; i++) {
		/* RTLD_NOW: a missing symbol of the library itself is found here, not mid-run */
		handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!handle && !why[0])
			snprintf(why, sizeof(why), "%s", dlerror());
	}
	if (!handle)
		return sl_err_set(err, SL_ENOTFOUND, "cannot load %s (%s): %s", names[0], why,
				  install_hint);
	void *found[MAX_SYMBOLS];
	for (int i = 0; i < count; i++) {
		dlerror();
		found[i] = dlsym(handle, symbols[i].name);
		if (!found[i]) {
			const char *reason = dlerror();
			return sl_err_set(err, SL_ENOTFOUND, "%s has no symbol '%s' (%s): %s", names[0],
					  symbols[i].name, reason ? reason : "null address",
					  install_hint);
		}
	}
	for (int i = 0; i < count; i++)
		*symbols[i].slot = found[i];
	return 0;
}
