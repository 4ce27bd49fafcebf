/* stderr logging, one line per call. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

static void log_line(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "sailor: %s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
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
