/* Error values: see err.h. Messages are truncated, never overflowed. */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sl_err_set(struct sl_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

int sl_err_prefix(struct sl_err *err, const char *fmt, ...)
{
	if (!err)
		return 0;
	char prefix[SL_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	/* "prefix: message", cut at the buffer's end (explicit lengths: no truncation warnings) */
	char joined[SL_ERR_MSG_MAX];
	size_t used = strnlen(prefix, sizeof(joined) - 1);
	memcpy(joined, prefix, used);
	const char *sep = ": ";
	for (size_t i = 0; sep[i] && used < sizeof(joined) - 1; i++)
		joined[used++] = sep[i];
	size_t rest = strnlen(err->msg, sizeof(err->msg));
	if (rest > sizeof(joined) - 1 - used)
		rest = sizeof(joined) - 1 - used;
	memcpy(joined + used, err->msg, rest);
	joined[used + rest] = '\0';
	memcpy(err->msg, joined, sizeof(err->msg));
	return err->code;
}

int sl_err_exit_status(int code)
{
	if (code == SL_OK)
		return 0;
	return code == SL_EUSAGE ? 2 : 1;
}
