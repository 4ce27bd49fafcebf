/* Timelines (timeline.h): recording spans and writing the sailor.timeline/1 file.
 * The file is written by hand, not built as a jansson tree: a run's timeline holds up to
 * SL_TIMELINE_MAX_SPANS spans per rank, and streaming them keeps memory at the spans themselves.
 * Output is deterministic: spans in the order given, times in microseconds with 3 decimals. */
#include "plan/timeline.h"

#include <stdlib.h>

#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "util/atomic_file.h"

const char *sl_timeline_kind_name(int kind)
{
	switch (kind) {
	case SL_TL_WAIT_SENDS: return "wait-sends";
	case SL_TL_GRAD_SYNC: return "grad-sync";
	case SL_TL_SCALARS: return "loss-and-norm";
	case SL_TL_UPDATE: return "update";
	}
	if (kind >= SL_INSTR_LOAD_MICROBATCH && kind <= SL_INSTR_OPTIMIZER_STEP)
		return sl_instr_op_name((enum sl_instr_op)kind);
	return "?";
}

/* Perfetto colours spans by category: compute, communication, or the step's phases. */
static const char *category(int kind)
{
	switch (kind) {
	case SL_INSTR_FORWARD:
	case SL_INSTR_BACKWARD:
	case SL_TL_UPDATE:
		return "compute";
	case SL_TL_GRAD_SYNC:
	case SL_TL_SCALARS:
		return "collective";
	}
	return "p2p";
}

void sl_timeline_add(struct sl_timeline *tl, int rank, int step, int kind, int microbatch,
		     double start_s, double end_s, double cpu_s)
{
	if (tl->count == tl->cap) {
		long cap = tl->cap ? 2 * tl->cap : 1024;
		if (cap > SL_TIMELINE_MAX_SPANS)
			cap = SL_TIMELINE_MAX_SPANS;
		struct sl_timeline_span *grown =
			cap > tl->cap ? realloc(tl->spans, (size_t)cap * sizeof(*grown)) : NULL;
		if (!grown) {
			tl->dropped++;
			return;
		}
		tl->spans = grown;
		tl->cap = cap;
	}
	tl->spans[tl->count++] = (struct sl_timeline_span){rank, step, kind, microbatch,
							   start_s, end_s, cpu_s};
}

void sl_timeline_free(struct sl_timeline *tl)
{
	free(tl->spans);
	tl->spans = NULL;
	tl->count = tl->cap = tl->dropped = 0;
}

double sl_timeline_first_start_s(const struct sl_timeline *tl)
{
	double first = 0;
	for (long i = 0; i < tl->count; i++)
		if (i == 0 || tl->spans[i].start_s < first)
			first = tl->spans[i].start_s;
	return first;
}

/* A JSON string of a name that comes from our own files (GPU types, zones, hosts, paths): only
 * the characters JSON needs escaped are escaped; control characters become spaces. */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
	}
	fputc('"', f);
}

int sl_timeline_write(const struct sl_timeline *tl, const struct sl_role_table *table,
		      const struct sl_timeline_meta *meta, const char *path, struct sl_err *err)
{
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, "timeline", err);
	if (rc)
		return rc;
	FILE *f = af.f;
	fprintf(f, "{\"schema\":\"sailor.timeline/1\",\"source\":");
	put_string(f, meta->source);
	fprintf(f, ",\"plan\":");
	put_string(f, meta->plan_path);
	fprintf(f, ",\"model\":");
	put_string(f, meta->model);
	fprintf(f, ",\"world_size\":%d,\"spans_dropped\":%ld,\"displayTimeUnit\":\"ms\","
		"\n\"traceEvents\":[", table->world_size, tl->dropped);
	/* one process per rank, named for its role (Perfetto's track names) */
	for (int r = 0; r < table->world_size; r++) {
		const struct sl_role *ro = &table->roles[r];
		char label[512];
		int named = meta->cluster && ro->host >= 0 && ro->host < meta->cluster->host_count;
		snprintf(label, sizeof(label), "rank %d: stage %d pipeline %d tp %d/%d, %s, %s%s%s", r,
			 ro->stage, ro->pipeline, ro->tp_rank, ro->tp, meta->cat->gpus[ro->gpu].name,
			 meta->cat->zones[ro->zone].name, named ? ", " : "",
			 named ? meta->cluster->hosts[ro->host].name : "");
		fprintf(f, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":",
			r ? "," : "", r);
		put_string(f, label);
		fprintf(f, ",\"stage\":%d,\"pipeline\":%d,\"tp_rank\":%d,\"tp\":%d,\"gpu\":", ro->stage,
			ro->pipeline, ro->tp_rank, ro->tp);
		put_string(f, meta->cat->gpus[ro->gpu].name);
		fprintf(f, "}}");
	}
	for (long i = 0; i < tl->count; i++) {
		const struct sl_timeline_span *sp = &tl->spans[i];
		fprintf(f, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":0,"
			"\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":%d,\"microbatch\":%d",
			sl_timeline_kind_name(sp->kind), category(sp->kind), sp->rank,
			(sp->start_s - meta->origin_s) * 1e6, (sp->end_s - sp->start_s) * 1e6,
			sp->step, sp->microbatch);
		if (sp->cpu_s >= 0)
			fprintf(f, ",\"cpu_us\":%.3f", sp->cpu_s * 1e6);
		fprintf(f, "}}");
	}
	fprintf(f, "\n]}\n");
	return sl_atomic_commit(&af, err);
}
