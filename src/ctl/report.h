/* `sailor report`: a picture of a controller run, drawn by gnuplot, and a text summary.
 *
 * Reads RUNDIR/steps.jsonl and RUNDIR/events.jsonl (controller.h, events.h) and writes, in
 * RUNDIR/report/: steps.dat (t_s, step, loss, measured it/s, predicted it/s, generation),
 * report.gp (the gnuplot script, kept so a person can restyle it), and the figure: PNG
 * (pngcairo) or SVG, by the output's extension. Two panels sharing the time axis: throughput
 * (measured per step, and the planner's prediction for the plan running) and loss; vertical
 * lines mark generation starts (grey), pool changes (blue) and failures (red).
 */
#ifndef SL_CTL_REPORT_H
#define SL_CTL_REPORT_H

#include <stdio.h>

#include "util/err.h"

/* output NULL: RUNDIR/report.png. summary (may be NULL) receives the text summary. */
int sl_ctl_report(const char *run_dir, const char *output, FILE *summary, struct sl_err *err);

#endif
