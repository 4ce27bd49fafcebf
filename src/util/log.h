/* One line format on stderr: "sailor: <level>: <message>", for warnings and notes from any
 * module. A command's failure is reported by the command (cli/args.h, sl_cli_error: "sailor
 * <command>: <message>"). Progress lines of training are not logs; they go to stdout from rank 0
 * (see src/train/). */
#ifndef SL_UTIL_LOG_H
#define SL_UTIL_LOG_H

void sl_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A fact the user should know once (a default taken), always shown. */
void sl_log_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
