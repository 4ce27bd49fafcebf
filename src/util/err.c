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
	char joined[SL_ERR_MSG_MAX];
	snprintf(joined, sizeof(joined), "%s: %s", prefix, err->msg);
	memcpy(err->msg, joined, sizeof(err->msg));
	return err->code;
}

int sl_err_exit_status(int code)
{
	if (code == SL_OK)
		return 0;
	return code == SL_EUSAGE ? 2 : 1;
}
