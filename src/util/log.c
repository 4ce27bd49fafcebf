/* stderr logging, one line per call. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int verbose_enabled = -1;

void sl_log_set_verbose(int verbose) { verbose_enabled = verbose; }

static void log_line(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "sailor: %s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void sl_log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line("error", fmt, ap);
	va_end(ap);
}

void sl_log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line("warning", fmt, ap);
	va_end(ap);
}

void sl_log_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line("note", fmt, ap);
	va_end(ap);
}

void sl_log_info(const char *fmt, ...)
{
	if (verbose_enabled < 0) {
		const char *env = getenv("SAILOR_VERBOSE");
		verbose_enabled = env && *env && *env != '0';
	}
	if (!verbose_enabled)
		return;
	va_list ap;
	va_start(ap, fmt);
	log_line("info", fmt, ap);
	va_end(ap);
}
