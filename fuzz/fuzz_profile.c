/* Fuzz target: profile files (data/profiles/<MODEL>/<GPU>.json) through sl_profile_load, with
 * no expected layer count and with OPT-350's 26 (the first byte picks). Every accepted entry
 * must give every layer a finite time >= 0. */
#include <math.h>

#include "fuzz_util.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_setup();
	if (size < 1)
		return 0;
	const char *path = fuzz_write("profile.json", data + 1, size - 1);
	struct sl_profile *prof = NULL;
	struct sl_err err = {0};
	if (!sl_profile_load(path, data[0] & 1 ? 26 : 0, &prof, &err)) {
		for (int e = 0; e < prof->entry_count; e++)
			for (int l = 0; l < prof->num_layers; l++) {
				const struct sl_profile_entry *x = &prof->entries[e];
				fuzz_assert(isfinite(x->fwd_s[l]) && x->fwd_s[l] >= 0);
				fuzz_assert(isfinite(x->bwd_s[l]) && x->bwd_s[l] >= 0);
				fuzz_assert(isfinite(x->update_s[l]) && x->update_s[l] >= 0);
			}
	}
	sl_profile_free(prof);
	return 0;
}
