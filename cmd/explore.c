/*
 * `soak explore CONFIG --seed N`: every interleaving of one seed's scenario
 * at its scheduled proxy, up to a bound on preemptions (docs/explore.md).
 *
 * Stateless model checking in the manner of CHESS (Musuvathi et al., OSDI
 * 2008), loom and Shuttle's check_dfs, over real processes and a real
 * PostgreSQL: every execution starts from the seed's own start (the schema
 * reset, fresh turn processes, the same turn seeds and faults) and follows
 * a prefix of choices the gate is told strictly (plan.h's plan_proxy.prefix);
 * after the prefix the gate extends it without preempting anyone (the turn
 * that went last goes on while it can, else the lowest waiting turn).  Each
 * step of an execution records the turns that had an exchange waiting
 * (the trace's `cand`); depth first, every other waiting turn at every step
 * past the prefix becomes a prefix of its own, unless taking it would make
 * more than --preemptions preemptions.  A preemption is a step that passes
 * over the turn of the step before while that turn has its next exchange
 * waiting; a turn that waits on a lock, or has exited, is not preempted by
 * being passed.
 *
 * Without a bound, schedules equivalent to one already run (the same but
 * for the order of steps that commute, by a conservative rule: branch's
 * sleep sets, indep) are pruned; --no-reduce runs them all.  What the
 * result claims is said with it: the bound, whether the tree was exhausted
 * for it, and what makes an execution differ from the schedule it was
 * given, each counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <unistd.h>
#include <sys/wait.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "common/config.h"
#include "common/log.h"
#include "common/msg.h"
#include "common/plan.h"
#include "common/seed.h"
#include "common/soak.h"
#include "common/units.h"
#include "common/util.h"
#include "common/verdict.h"
#include "common/auth.h"
#include "common/bundle.h"
#include "common/tlsconf.h"
#include "coordinator/coord.h"
#include "coordinator/fingerprint.h"
#include "coordinator/server.h"
#include "isolation/iso.h"
#include "worker/wrk.h"
#include "worker/xexec.h"

#define XP_SAVED_PLANS		100	/* failing schedules written as plans */
#define XP_DEFAULT_P		2

/* A branch still to run: a prefix of choices. */
struct xnode {
	uint64_t	 no;		/* its number, in the order made (root: 1) */
	struct xstep	*steps;
	size_t		 n;
	int		 preemptions;
	uint64_t	 sleep;		/* turns asleep after the prefix (reduction) */
};

struct xstack {
	struct xnode	*v;
	size_t		 n, cap;
};

/* What the executions were, counted. */
struct xstats {
	uint64_t	 executions, failing, passing, diverged, infra;
	uint64_t	 distinct;
	uint64_t	 beyond_bound;		/* branches the bound cut */
	uint64_t	 slept;			/* branches a sleep set cut */
	uint64_t	 redundant;		/* executions whose rest was covered */
	/* equivalence classes (by the reduction's rule) and their verdicts */
	uint64_t	*cset;
	uint8_t		*cverdict;		/* bit 0 passed, bit 1 failed */
	size_t		 ccap, cn;
	uint64_t	 mixed;			/* classes with both verdicts */
	bool		 classes_cut;		/* an execution too long to class */
	uint64_t	 no_alternative;	/* a waiting turn that never went */
	uint64_t	 steps_min, steps_max, steps_sum;
	uint64_t	 forced, wakes, pg_deadlocks, soak_deadlocks, notify;
	uint64_t	 several_conns;		/* executions with a turn of 2+ connections */
	uint64_t	 saved;
	uint64_t	 nodes;			/* branches made (their numbers) */
	int64_t		 exec_ms;
	int64_t		 turns_ms;		/* of that, from the first turn's start
						   to the last one's end, per round */
	/* coverage: per step position, the turns seen waiting and taken */
	uint64_t	*seen, *tried;
	size_t		 npos;
	uint64_t	 raced[XP_MAX_TURNS];	/* bit u of [t]: t and u waited together */
	/* distinct schedules: their digests, an open-addressing set */
	uint64_t	*set;
	size_t		 setcap, setn;
	/* fingerprints of the failing executions */
	char		**fps;
	uint64_t	*fpcount;
	size_t		 nfps;
};

static volatile sig_atomic_t	xp_stop;

static void
xp_on_signal(int sig)
{
	xp_stop = sig;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: soak explore CONFIG --seed N [--turns LIST] [--rounds R]\n"
	    "                    [--preemptions P] [--budget DUR|COUNT] [--workers N]\n"
	    "                    [--out DIR | --resume DIR] [--no-reduce] [-v]\n"
	    "                    [--listen URL [--secret-file FILE] [--insecure]\n"
	    "                     [--tls-cert PEM --tls-client-ca PEM]]\n"
	    "\n"
	    "Runs one seed's scenario again and again, each time in another order at\n"
	    "its scheduled proxy, until every order with at most P preemptions has run\n"
	    "(depth first; a preemption passes over a turn whose next statement is\n"
	    "waiting).  Every execution starts from the seed's start: the schema reset,\n"
	    "fresh turns with the seed's turn seeds, the seed's faults.  Says whether\n"
	    "the tree was exhausted for the bound, how many schedules ran and failed,\n"
	    "and what made an execution depart from the order it was given; every\n"
	    "failing schedule is written as a plan (soak replay --plan runs it).\n"
	    "\n"
	    "  --seed N         the seed whose turns, turn seeds and faults are explored\n"
	    "  --turns LIST     only these turns run (\"0,1\"; the others are never\n"
	    "                   started); default every turn of the config\n"
	    "  --preemptions P  the bound (default %d; -1: none, every interleaving)\n"
	    "  --rounds R       explore round R only: the rounds before it run once as\n"
	    "                   the seed ran them, the ones after as they come\n"
	    "  --budget B       stop after B executions (a number) or after B of\n"
	    "                   wall time (30s, 5m); the result is then incomplete\n"
	    "  --workers N      N executions at a time, each in a process of its own\n"
	    "                   with its own schema (default 1)\n"
	    "  --out DIR        explore.json and failing/K.plan.json go here (default\n"
	    "                   ./soak-explore)\n"
	    "  --resume DIR     go on with the exploration DIR/explore.jsonl journals\n"
	    "                   (the same config, seed and options): what it took is\n"
	    "                   taken again, not run; the rest runs\n"
	    "  --listen URL     run no execution here: lease them one at a time to the\n"
	    "                   workers that connect (soak worker --connect URL), as\n"
	    "                   soak coordinator does; a lost worker's goes to another\n"
	    "  --secret-file F  with --listen: the shared secret (else SOAK_SECRET)\n"
	    "  --insecure       with --listen: what soak coordinator --insecure allows\n"
	    "  --tls-cert PEM, --tls-client-ca PEM\n"
	    "                   with --listen tls+tcp://: as for soak coordinator\n"
	    "  --no-reduce      run every schedule, equivalent or not (without a\n"
	    "                   bound, schedules that differ only in the order of\n"
	    "                   steps that commute -- BEGIN, SET, two plain reads --\n"
	    "                   are otherwise pruned by sleep sets; with a bound\n"
	    "                   nothing is)\n"
	    "  -v, --verbose    one line per execution, and the log\n"
	    "\n"
	    "The config must have exactly one proxy with a schedule.\n"
	    "\n"
	    "Exit status: 1 a failing schedule was found; 0 the tree was exhausted for\n"
	    "the bound and none failed; 2 incomplete (budget, Ctrl-C, or executions\n"
	    "that diverged or broke) and none failed: never a pass; 64 usage; 78\n"
	    "config error; 125 the seed itself could not run (infra).\n" SOAK_MANUAL,
	    XP_DEFAULT_P);
}

static void
stack_push(struct xstack *s, struct xnode n)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	s->v[s->n++] = n;
}

/* Whether d was not in the set (then it is now). */
static bool
set_add(struct xstats *x, uint64_t d)
{
	size_t	i;

	if (d == 0)
		d = 1;
	if (2 * (x->setn + 1) > x->setcap) {
		uint64_t	*old = x->set;
		size_t		 oldcap = x->setcap, j;

		x->setcap = x->setcap ? x->setcap * 2 : 256;
		x->set = xcalloc(x->setcap, sizeof(*x->set));
		x->setn = 0;
		for (j = 0; j < oldcap; j++)
			if (old[j] != 0)
				(void)set_add(x, old[j]);
		free(old);
	}
	for (i = d & (x->setcap - 1); x->set[i] != 0; i = (i + 1) & (x->setcap - 1))
		if (x->set[i] == d)
			return false;
	x->set[i] = d;
	x->setn++;
	return true;
}

/* Whether choosing turn t at step i of s preempts the turn of step i - 1. */
static bool
preempts(const struct xstep *s, size_t i, int t)
{
	int	prev;

	if (i == 0)
		return false;
	prev = s[i - 1].turn;
	return t != prev && (s[i].cand >> prev & 1);
}

static uint64_t
schedule_digest(const struct xstep *s, size_t n)
{
	uint64_t	h = 0xcbf29ce484222325ULL;
	size_t		i;

	for (i = 0; i < n; i++) {
		uint64_t	v[3] = { (uint64_t)s[i].turn << 32 | (uint32_t)s[i].round,
				    s[i].key, s[i].occ };

		h ^= fnv1a64(v, sizeof(v));
		h *= 0x100000001b3ULL;
	}
	return h;
}

/*
 * Whether two steps of two turns commute (docs/explore.md, "Reduction"):
 * a BEGIN or a session setting commutes with anything of another session,
 * two plain reads with each other; everything else, and a step not known,
 * is dependent.
 */
static bool
indep(const struct xstep *a, const struct xstep *b)
{
	if (a == NULL || b == NULL || a->turn == b->turn)
		return false;
	if (a->cls == XC_BEGIN || b->cls == XC_BEGIN || a->cls == XC_SESSION ||
	    b->cls == XC_SESSION)
		return true;
	return a->cls == XC_READ && b->cls == XC_READ;
}

/* Turn u's step waiting at position j of s: its next one from j, or NULL. */
static const struct xstep *
pending(const struct xstep *s, size_t n, size_t j, int u)
{
	for (; j < n; j++)
		if (s[j].turn == u)
			return &s[j];
	return NULL;
}

/*
 * The children of an execution that ran prefix node: at every step past
 * the prefix, each other turn that was waiting, as the exchange it had
 * waiting (its next step in this execution), within the bound.
 *
 * With reduce, sleep sets (Godefroid): siblings are ordered (the turn the
 * execution took, then the others by number); a child carries asleep the
 * earlier siblings and the node's sleeping turns whose waiting steps
 * commute with its own, and is not pushed while its turn is asleep; a
 * turn stays asleep down the path until a step that does not commute with
 * its waiting one.  An execution whose default extension took a sleeping
 * turn is covered from there on by the sibling that ran it first: nothing
 * past that step is branched.
 */
static void
branch(struct xstack *st, const struct xnode *node, const struct xstep *s, size_t n,
    int bound, int only_round, bool reduce, struct xstats *x)
{
	int		*pc = xcalloc(n + 1, sizeof(*pc));
	struct xnode	*kids = NULL;
	size_t		 i, nk = 0, capk = 0;
	uint64_t	 zz = node->sleep, done, nz;
	int		 t, u, d;

	for (i = 1; i <= n; i++)
		pc[i] = pc[i - 1] + (preempts(s, i - 1, s[i - 1].turn) ? 1 : 0);
	for (i = node->n; i < n; i++) {
		d = s[i].turn;
		if (reduce && (zz >> d & 1)) {
			x->redundant++;
			break;
		}
		done = (uint64_t)1 << d;
		for (t = 0; t < XP_MAX_TURNS && !(only_round >= 0 &&
		    s[i].round != only_round); t++) {
			const struct xstep	*e;
			struct xnode		 child;
			int			 p;

			if (!(s[i].cand >> t & 1) || t == d)
				continue;
			if (reduce && (zz >> t & 1)) {
				x->slept++;
				continue;
			}
			p = pc[i] + (preempts(s, i, t) ? 1 : 0);
			if (bound >= 0 && p > bound) {
				x->beyond_bound++;
				continue;
			}
			if ((e = pending(s, n, i + 1, t)) == NULL) {
				x->no_alternative++;
				continue;
			}
			child.no = ++x->nodes;
			child.n = i + 1;
			child.steps = xcalloc(child.n, sizeof(*child.steps));
			memcpy(child.steps, s, i * sizeof(*s));
			child.steps[i] = *e;
			child.steps[i].cand = s[i].cand;
			child.preemptions = p;
			child.sleep = 0;
			for (u = 0; reduce && u < XP_MAX_TURNS; u++)
				if (((zz | done) >> u & 1) &&
				    indep(pending(s, n, i, u), e))
					child.sleep |= (uint64_t)1 << u;
			if (nk == capk) {
				capk = capk ? capk * 2 : 16;
				kids = xreallocarray(kids, capk, sizeof(*kids));
			}
			kids[nk++] = child;
			done |= (uint64_t)1 << t;
		}
		for (u = 0, nz = 0; reduce && u < XP_MAX_TURNS; u++)
			if ((zz >> u & 1) && indep(pending(s, n, i + 1, u), &s[i]))
				nz |= (uint64_t)1 << u;
		zz = nz;
	}
	/* pushed from the deepest, so the shallowest branch is run first */
	while (nk > 0)
		stack_push(st, kids[--nk]);
	free(kids);
	free(pc);
}

/*
 * The schedule's equivalence class: its lexicographic normal form under
 * indep (at each place the lowest turn whose next step commutes with
 * every step left before it), as a digest.  0: too long to class.
 */
#define XP_CLASS_MAX_STEPS	512

static uint64_t
class_digest(const struct xstep *s, size_t n)
{
	struct xstep	*out;
	bool		*used;
	size_t		 k, i, l, best;
	uint64_t	 d;

	if (n > XP_CLASS_MAX_STEPS)
		return 0;
	out = xcalloc(n + 1, sizeof(*out));
	used = xcalloc(n + 1, sizeof(*used));
	for (k = 0; k < n; k++) {
		best = SIZE_MAX;
		for (i = 0; i < n; i++) {
			bool	ok = !used[i];

			for (l = 0; l < i && ok; l++)
				if (!used[l] && !indep(&s[l], &s[i]))
					ok = false;
			if (ok && (best == SIZE_MAX || s[i].turn < s[best].turn))
				best = i;
		}
		used[best] = true;
		out[k] = s[best];
	}
	d = schedule_digest(out, n);
	free(out);
	free(used);
	return d == 0 ? 1 : d;
}

/* The class's verdicts so far, with this one's (bit 0 pass, bit 1 fail). */
static void
class_add(struct xstats *x, uint64_t d, int verdict_bit)
{
	size_t	i;

	if (d == 0) {
		x->classes_cut = true;
		return;
	}
	if (2 * (x->cn + 1) > x->ccap) {
		uint64_t	*os = x->cset;
		uint8_t		*ov = x->cverdict;
		size_t		 oc = x->ccap, j;

		x->ccap = x->ccap ? x->ccap * 2 : 256;
		x->cset = xcalloc(x->ccap, sizeof(*x->cset));
		x->cverdict = xcalloc(x->ccap, sizeof(*x->cverdict));
		x->cn = 0;
		x->mixed = 0;
		for (j = 0; j < oc; j++)
			if (os[j] != 0) {
				class_add(x, os[j], ov[j] & 1);
				if (ov[j] & 2)
					class_add(x, os[j], 2);
			}
		free(os);
		free(ov);
	}
	for (i = d & (x->ccap - 1); x->cset[i] != 0 && x->cset[i] != d;
	    i = (i + 1) & (x->ccap - 1))
		;
	if (x->cset[i] == 0) {
		x->cset[i] = d;
		x->cn++;
	}
	if (x->cverdict[i] != 3 && (x->cverdict[i] | verdict_bit) == 3)
		x->mixed++;
	x->cverdict[i] |= (uint8_t)verdict_bit;
}

static void
coverage_add(struct xstats *x, const struct xstep *s, size_t n)
{
	size_t	i;
	int	t;

	if (n > x->npos) {
		x->seen = xreallocarray(x->seen, n, sizeof(*x->seen));
		x->tried = xreallocarray(x->tried, n, sizeof(*x->tried));
		memset(x->seen + x->npos, 0, (n - x->npos) * sizeof(*x->seen));
		memset(x->tried + x->npos, 0, (n - x->npos) * sizeof(*x->tried));
		x->npos = n;
	}
	for (i = 0; i < n; i++) {
		x->seen[i] |= s[i].cand;
		x->tried[i] |= (uint64_t)1 << s[i].turn;
		for (t = 0; t < XP_MAX_TURNS; t++)
			if (s[i].cand >> t & 1)
				x->raced[t] |= s[i].cand & ~((uint64_t)1 << t);
	}
}

static void
fp_count(struct xstats *x, const char *fp)
{
	size_t	i;

	for (i = 0; i < x->nfps; i++)
		if (strcmp(x->fps[i], fp) == 0) {
			x->fpcount[i]++;
			return;
		}
	x->fps = xreallocarray(x->fps, (x->nfps + 1), sizeof(*x->fps));
	x->fpcount = xreallocarray(x->fpcount, (x->nfps + 1), sizeof(*x->fpcount));
	x->fps[x->nfps] = xstrdup(fp);
	x->fpcount[x->nfps++] = 1;
}

static char *
turn_list(const struct xstep *s, size_t n)
{
	char	*buf = xcalloc(n * 4 + 1, 1);
	size_t	 i, o = 0;

	for (i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, n * 4 + 1 - o, "%s%d", i ? " " : "",
		    s[i].turn);
	return buf;
}

/* "0,1" into runs (rounds x turns); -1 with err. */
static int
parse_turns(const char *s, const struct cfg *cfg, bool *runs, char *err)
{
	char		*copy = xstrdup(s), *tok, *save = NULL, *end;
	bool		*one = xcalloc((size_t)cfg->turns, sizeof(*one));
	long		 t;
	int		 r, n = 0;

	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		t = strtol(tok, &end, 10);
		if (errno != 0 || *end != '\0' || end == tok || t < 0 || t >= cfg->turns) {
			errf(err, "--turns: \"%s\" is not a turn of %s (0..%d)", tok,
			    cfg->name, cfg->turns - 1);
			free(copy);
			free(one);
			return -1;
		}
		n += !one[t];
		one[t] = true;
	}
	free(copy);
	if (n == 0) {
		free(one);
		return errf(err, "--turns: no turn given");
	}
	for (r = 0; r < cfg->rounds; r++)
		memcpy(runs + (size_t)r * (size_t)cfg->turns, one, (size_t)cfg->turns);
	free(one);
	return 0;
}

/* A failing execution's plan (its record has it), with its fingerprint. */
static char *
save_failing(const struct xrec *r, const char *fp, const char *dir, uint64_t k)
{
	json_t	*plan, *failure;
	char	*path;

	if (!json_is_object(r->plan))
		return NULL;
	plan = json_deep_copy(r->plan);
	failure = json_object_get(plan, "failure");
	if (!json_is_object(failure)) {
		failure = json_object();
		json_object_set_new(plan, "failure", failure);
	}
	json_object_set_new(failure, "fingerprint", json_string(fp));
	json_object_set_new(failure, "message", json_string(r->message));
	path = xasprintf("%s/failing/%" PRIu64 ".plan.json", dir, k);
	if (json_dump_file(plan, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == -1) {
		log_warnx("cannot write %s", path);
		free(path);
		path = NULL;
	}
	json_decref(plan);
	return path;
}

static json_t *
turnset_json(uint64_t m)
{
	json_t	*a = json_array();
	int	 t;

	for (t = 0; t < XP_MAX_TURNS; t++)
		if (m >> t & 1)
			json_array_append_new(a, json_integer(t));
	return a;
}

/* What one execution's result goes into (take_result). */
struct xctx {
	const struct cfg	*cfg;
	const char		*proxy, *outabs, *config_arg;
	struct xstack		*st;
	struct xstats		*x;
	json_t			*failing;
	int			 bound, only_round;
	bool			 reduce, verbose;
	FILE			*journal;	/* explore.jsonl, or NULL */
	bool			 journal_failed;
	bool			 replaying;	/* --resume: the journal's records */
};

/* Runs node's prefix as execution no on w, and its record. */
static void
run_one(struct xctx *c, struct wrk *w, struct plan_proxy *pp, uint64_t seed,
    const struct xnode *node, uint64_t no, struct xrec *r)
{
	struct seed_result	res = { 0 };
	int64_t			ms;

	ms = xp_run_one(w, pp, seed, node->steps, node->n, no, &res);
	xp_rec_of_result(&res, c->proxy, ms, r);
	seed_result_clear(&res);
}

/* The journal's line for an execution taken (explore.jsonl), made durable. */
static void
journal_rec(struct xctx *c, const struct xnode *node, const struct xrec *r)
{
	json_t	*j;
	char	*text;

	if (c->journal == NULL || c->replaying)
		return;
	j = json_pack("{s:I,s:o}", "no", (json_int_t)node->no, "rec", xp_rec_json(r));
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (text == NULL || fprintf(c->journal, "%s\n", text) < 0 ||
	    fflush(c->journal) != 0 || fdatasync(fileno(c->journal)) == -1) {
		if (!c->journal_failed)
			printf("  cannot write the journal (%s): a resume would run "
			    "these executions again\n", strerror(errno));
		c->journal_failed = true;
	}
	free(text);
}

/* An execution's record into the counts, the failing plans and the tree. */
static void
take_rec(struct xctx *c, struct xnode *node, const struct xrec *r)
{
	struct xstats	*x = c->x;
	const struct xstep *s = r->steps;
	size_t		 n = r->n;
	char		*fp, *p;
	bool		 quiet = c->replaying;

	journal_rec(c, node, r);
	x->exec_ms += r->ms;
	x->turns_ms += r->turns_ms;
	x->executions++;
	x->forced += r->inexact.forced;
	x->wakes += r->inexact.wakes;
	x->pg_deadlocks += r->inexact.pg_deadlocks;
	x->soak_deadlocks += r->inexact.soak_deadlocks;
	x->notify += r->inexact.notify;
	x->several_conns += r->inexact.several_conns;
	if (!r->has_steps) {
		if (!quiet)
			printf("  execution %" PRIu64 ": no schedule read (%s): its "
			    "branches are not explored\n", x->executions, r->why_no_steps);
		x->infra++;
		return;
	}
	x->distinct += set_add(x, schedule_digest(s, n));
	x->steps_sum += n;
	if (x->executions == 1 || n < x->steps_min)
		x->steps_min = n;
	if (n > x->steps_max)
		x->steps_max = n;
	coverage_add(x, s, n);
	if (c->verbose && !quiet) {
		char	*tl = turn_list(s, n);

		printf("  execution %" PRIu64 " (prefix %zu, %d preemption%s): %s "
		    "— %s\n", x->executions, node->n, node->preemptions,
		    node->preemptions == 1 ? "" : "s", tl,
		    msg_verdict_name(r->verdict));
		free(tl);
	}
	if (r->verdict == VERDICT_PASS || (r->verdict == VERDICT_FAIL &&
	    r->reason != REASON_DIVERGED))
		class_add(x, class_digest(s, n), r->verdict == VERDICT_PASS ? 1 : 2);
	if (r->reason == REASON_DIVERGED) {
		/* the scenario did not do again what it did: the branch is lost */
		x->diverged++;
		if (!quiet)
			printf("  execution %" PRIu64 " diverged: %s\n", x->executions,
			    r->message);
	} else if (r->verdict == VERDICT_FAIL) {
		x->failing++;
		fp = fp_string(c->cfg->name, reason_name(r->reason), r->invariants);
		fp_count(x, fp);
		p = x->saved < XP_SAVED_PLANS ? save_failing(r, fp, c->outabs,
		    x->failing) : NULL;
		if (p != NULL) {
			char	*tl = turn_list(s, n);

			x->saved++;
			json_array_append_new(c->failing, json_pack("{s:s,s:s,s:s,s:i,s:s}",
			    "plan", p, "fingerprint", fp, "turns", tl,
			    "preemptions", (int)(node->preemptions), "message",
			    r->message));
			if ((x->saved <= 3 || c->verbose) && !quiet)
				printf("  failing schedule %" PRIu64 ": %s\n    soak replay "
				    "%s --plan %s\n", x->failing, tl, c->config_arg, p);
			free(tl);
			free(p);
		}
		free(fp);
		branch(c->st, node, s, n, c->bound, c->only_round, c->reduce, x);
	} else if (r->verdict == VERDICT_PASS) {
		x->passing++;
		branch(c->st, node, s, n, c->bound, c->only_round, c->reduce, x);
	} else {
		x->infra++;
		if (!quiet)
			printf("  execution %" PRIu64 ": %s (%s): its branches are not "
			    "explored\n", x->executions, msg_verdict_name(r->verdict),
			    r->message);
	}
}

/* ---- --workers N: executors in processes of their own ---- */

/* One JSON message on fd, as its length (4 bytes, big-endian) and text. */
static int
msg_put(int fd, json_t *j)
{
	char		*text = json_dumps(j, JSON_COMPACT);
	size_t		 len = text ? strlen(text) : 0, o = 0;
	uint8_t		 h[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
			    (uint8_t)(len >> 8), (uint8_t)len };
	ssize_t		 k;
	int		 rc = 0;

	if (text == NULL)
		return -1;
	while (o < 4 + len && rc == 0) {
		k = o < 4 ? write(fd, h + o, 4 - o) : write(fd, text + o - 4, len - (o - 4));
		if (k > 0)
			o += (size_t)k;
		else if (k == -1 && errno == EINTR)
			continue;
		else
			rc = -1;
	}
	free(text);
	return rc;
}

static int
read_full(int fd, void *buf, size_t n)
{
	size_t	o = 0;
	ssize_t	k;

	while (o < n) {
		if ((k = read(fd, (char *)buf + o, n - o)) > 0)
			o += (size_t)k;
		else if (k == -1 && errno == EINTR)
			continue;
		else
			return -1;	/* the other end is gone */
	}
	return 0;
}

/* The next message on fd, or NULL when the other end is gone. */
static json_t *
msg_get(int fd)
{
	uint8_t		 h[4];
	uint32_t	 len;
	char		*text;
	json_t		*j;

	if (read_full(fd, h, 4) == -1)
		return NULL;
	len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
	if (len > (uint32_t)WRK_TRACE_WHOLE_MAX + (64u << 20))
		return NULL;
	text = xcalloc(len + 1, 1);
	if (read_full(fd, text, len) == -1) {
		free(text);
		return NULL;
	}
	j = json_loadb(text, len, 0, NULL);
	free(text);
	return j;
}

static json_t *
node_json(const struct xnode *node, uint64_t no)
{
	return json_pack("{s:I,s:I,s:o}", "no", (json_int_t)no, "node",
	    (json_int_t)node->no, "steps", xp_steps_json(node->steps, node->n));
}

/*
 * An executor: its own worker (schema, workspace, services), running each
 * prefix it is sent and sending back the execution's record, until its
 * pipe closes.
 */
static void
executor_main(struct xctx *c, struct wrk *w, struct plan *base, struct plan_proxy *pp,
    uint64_t seed, int rfd, int wfd)
{
	struct xnode		 node = { 0 };
	struct xrec		 rec;
	json_t			*req, *rep;
	char			 err[ERR_LEN];

	w->plan = base;
	if (wrk_open(w, err) == -1) {
		rep = json_pack("{s:s}", "error", err);
		(void)msg_put(wfd, rep);
		json_decref(rep);
		wrk_close(w, true);
		return;
	}
	rep = json_pack("{s:b}", "ready", 1);
	(void)msg_put(wfd, rep);
	json_decref(rep);
	while ((req = msg_get(rfd)) != NULL) {
		if (xp_steps_parse(json_object_get(req, "steps"), &node.steps, &node.n,
		    err) == -1) {
			json_decref(req);
			break;
		}
		run_one(c, w, pp, seed, &node, (uint64_t)json_integer_value(
		    json_object_get(req, "no")), &rec);
		rep = json_pack("{s:o}", "rec", xp_rec_json(&rec));
		xp_rec_clear(&rec);
		free(node.steps);
		node.steps = NULL;
		json_decref(req);
		if (rep == NULL || msg_put(wfd, rep) == -1) {
			json_decref(rep);
			break;
		}
		json_decref(rep);
	}
	wrk_close(w, true);
}

/*
 * --workers N: the parent's worker is closed, N executors are forked,
 * each with a worker of its own (id 1..N: a schema each), and the tree is
 * handed out a prefix at a time; results come back in any order, which the
 * sleep sets do not mind (a sibling's sleep set names the siblings before
 * it in a fixed order, not the ones run first).  What stopped it, or NULL.
 */
static const char *
explore_parallel(struct xctx *c, struct wrk *w, struct plan *base, struct plan_proxy *pp,
    uint64_t seed, int nw, uint64_t budget_n, int64_t budget_ms, int64_t t0)
{
	struct ex {
		pid_t		 pid;
		int		 to, from;	/* request and result pipes */
		bool		 busy, ok;
		struct xnode	 node;
		uint64_t	 no;
	}		*ex = xcalloc((size_t)nw, sizeof(*ex));
	struct pollfd	*pf = xcalloc((size_t)nw, sizeof(*pf));
	struct xstack	*st = c->st;
	const char	*stopped = NULL;
	uint64_t	 sent = 0;
	int		 k, busy = 0, alive = 0, a[2], b[2];
	json_t		*j;

	/* The caller closed its worker: each executor opens its own. */
	fflush(stdout);
	fflush(stderr);
	for (k = 0; k < nw; k++) {
		ex[k].to = ex[k].from = -1;
		if (pipe2(a, O_CLOEXEC) == -1 || pipe2(b, O_CLOEXEC) == -1)
			break;
		if ((ex[k].pid = fork()) == -1) {
			close(a[0]), close(a[1]), close(b[0]), close(b[1]);
			break;
		}
		if (ex[k].pid == 0) {
			int	q;

			for (q = 0; q < k; q++)
				close(ex[q].to), close(ex[q].from);
			close(a[1]);
			close(b[0]);
			w->id = k + 1;
			free(w->workspace);
			w->workspace = xasprintf("%s/soak-explore-%d-x%d", scratch_root(),
			    (int)getppid(), k + 1);
			executor_main(c, w, base, pp, seed, a[0], b[1]);
			rm_rf(w->workspace);
			fflush(stdout);
			_exit(0);
		}
		close(a[0]);
		close(b[1]);
		ex[k].to = a[1];
		ex[k].from = b[0];
	}
	for (k = 0; k < nw; k++) {
		if (ex[k].from == -1)
			continue;
		if ((j = msg_get(ex[k].from)) != NULL && json_is_true(json_object_get(j,
		    "ready"))) {
			ex[k].ok = true;
			alive++;
		} else
			printf("  executor %d could not start: %s\n", k + 1, j ?
			    json_string_value(json_object_get(j, "error")) : "it died");
		json_decref(j);
	}
	printf("  %d executor%s at work\n", alive, alive == 1 ? "" : "s");
	while (alive > 0 && (busy > 0 || (st->n > 0 && stopped == NULL))) {
		/* hand out what there is, while nothing says stop */
		for (k = 0; k < nw && stopped == NULL; k++) {
			if (!ex[k].ok || ex[k].busy || st->n == 0)
				continue;
			if (xp_stop || (budget_n > 0 && sent >= budget_n) ||
			    (budget_ms > 0 && now_ms() - t0 >= budget_ms)) {
				stopped = xp_stop == SIGINT ? "Ctrl-C" : xp_stop ?
				    "SIGTERM" : "the budget";
				break;
			}
			ex[k].node = st->v[--st->n];
			ex[k].no = ++sent;
			j = node_json(&ex[k].node, ex[k].no);
			if (msg_put(ex[k].to, j) == -1) {
				stack_push(st, ex[k].node);
				ex[k].ok = false;
				alive--;
			} else {
				ex[k].busy = true;
				busy++;
			}
			json_decref(j);
		}
		if (busy == 0)
			break;
		for (k = 0; k < nw; k++) {
			pf[k].fd = ex[k].busy ? ex[k].from : -1;
			pf[k].events = POLLIN;
			pf[k].revents = 0;
		}
		if (poll(pf, (nfds_t)nw, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (k = 0; k < nw; k++) {
			struct xrec	rec;
			char		err[ERR_LEN];

			if (!ex[k].busy || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ex[k].busy = false;
			busy--;
			if ((j = msg_get(ex[k].from)) == NULL) {
				printf("  executor %d died running a prefix of %zu steps: "
				    "the prefix goes back\n", k + 1, ex[k].node.n);
				stack_push(st, ex[k].node);
				ex[k].ok = false;
				alive--;
				continue;
			}
			if (xp_stop) {
				/* the signal reached its turns too: this one says nothing */
				stack_push(st, ex[k].node);
				json_decref(j);
				continue;
			}
			if (xp_rec_parse(json_object_get(j, "rec"), &rec, err) == -1) {
				printf("  executor %d sent no record (%s): its prefix "
				    "goes back\n", k + 1, err);
				stack_push(st, ex[k].node);
				json_decref(j);
				continue;
			}
			json_decref(j);
			take_rec(c, &ex[k].node, &rec);
			xp_rec_clear(&rec);
			free(ex[k].node.steps);
		}
		if (xp_stop && stopped == NULL)
			stopped = xp_stop == SIGINT ? "Ctrl-C" : "SIGTERM";
	}
	if (alive == 0 && st->n > 0 && stopped == NULL)
		stopped = "no executor left";
	for (k = 0; k < nw; k++) {
		if (ex[k].to != -1)
			close(ex[k].to);	/* its end of input: it closes its worker */
		if (ex[k].from != -1)
			close(ex[k].from);
	}
	for (k = 0; k < nw; k++) {
		int	status;

		if (ex[k].pid > 0)
			while (waitpid(ex[k].pid, &status, 0) == -1 && errno == EINTR)
				;
	}
	free(ex);
	free(pf);
	return stopped;
}

/* ---- --listen URL: executions leased to `soak worker`s ---- */

struct xfleet {
	struct xctx	*c;
	const char	*proxy;
	char		*plan_text;	/* the base plan, as every lease carries it */
	struct xstack	 out;		/* executions leased, not answered */
	uint64_t	 budget_n;
	int64_t		 budget_ms, t0;
	const char	*stopped;
	json_t		*workers;	/* the workers that sent a result */
};

static bool
fleet_stop_now(struct xfleet *f)
{
	/* a count budget counts executions taken or out, as a local one does */
	if (f->stopped == NULL && (xp_stop || (f->c->st->n > 0 && ((f->budget_n > 0 &&
	    f->c->x->executions + f->out.n >= f->budget_n) ||
	    (f->budget_ms > 0 && now_ms() - f->t0 >= f->budget_ms)))))
		f->stopped = xp_stop == SIGINT ? "Ctrl-C" : xp_stop ? "SIGTERM" :
		    "the budget";
	return f->stopped != NULL;
}

static int
fleet_next(void *arg, uint64_t *no, char **payload)
{
	struct xfleet	*f = arg;
	struct xstack	*st = f->c->st;
	struct xnode	 node;
	json_t		*j;

	if (fleet_stop_now(f) || st->n == 0)
		return 0;
	node = st->v[--st->n];
	j = json_pack("{s:s,s:s,s:I,s:o}", "proxy", f->proxy, "plan", f->plan_text,
	    "no", (json_int_t)node.no, "steps", xp_steps_json(node.steps, node.n));
	*payload = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	*no = node.no;
	stack_push(&f->out, node);
	return 1;
}

/* The leased execution no, taken out of f->out (false: none). */
static bool
fleet_take(struct xfleet *f, uint64_t no, struct xnode *node)
{
	size_t	k;

	for (k = 0; k < f->out.n; k++)
		if (f->out.v[k].no == no) {
			*node = f->out.v[k];
			f->out.v[k] = f->out.v[--f->out.n];
			return true;
		}
	return false;
}

static void
fleet_result(void *arg, uint64_t no, uint32_t worker, int verdict, enum reason why,
    const json_t *detail)
{
	struct xfleet	*f = arg;
	struct xnode	 node;
	struct xrec	 rec;
	char		 err[ERR_LEN], name[16];

	if (!fleet_take(f, no, &node))
		return;
	if (xp_rec_parse(json_object_get(detail, "explore"), &rec, err) == -1) {
		/* a worker that could not run it (its database, its services):
		 * said as what it is, its branches not explored */
		const char	*m = json_string_value(json_object_get(detail, "message"));

		memset(&rec, 0, sizeof(rec));
		rec.verdict = verdict == VERDICT_PASS ? VERDICT_INFRA : verdict;
		rec.reason = verdict == VERDICT_PASS ? REASON_WORKER_LOST : why;
		snprintf(rec.message, sizeof(rec.message), "worker %u: %s", worker,
		    m ? m : err);
		snprintf(rec.why_no_steps, sizeof(rec.why_no_steps), "worker %u sent "
		    "no record: %.200s", worker, m ? m : err);
	}
	snprintf(name, sizeof(name), "%u", worker);
	json_object_set_new(f->workers, name, json_integer(json_integer_value(
	    json_object_get(f->workers, name)) + 1));
	take_rec(f->c, &node, &rec);
	xp_rec_clear(&rec);
	free(node.steps);
}

static void
fleet_lost(void *arg, uint64_t no, const char *why)
{
	struct xfleet	*f = arg;
	struct xnode	 node;

	(void)why;
	if (fleet_take(f, no, &node))
		stack_push(f->c->st, node);	/* next out, to another worker */
}

static bool
fleet_done(void *arg)
{
	struct xfleet	*f = arg;

	return (f->c->st->n == 0 && f->out.n == 0) || fleet_stop_now(f);
}

static int
fleet_tick(void *arg)
{
	struct xfleet	*f = arg;

	return xp_stop != 0 || (f->stopped != NULL && f->out.n == 0);
}

/*
 * --listen: the tree's executions leased one at a time to the workers
 * that connect (the same secret or TLS rules as soak coordinator's), the
 * config folder shipped to them as soak coordinator ships it.  A lease lost
 * with its worker (its connection closed and not back within the lease's
 * ttl) goes to another.  What stopped it, or NULL.
 */
static const char *
explore_fleet(struct xctx *c, const char *listen, struct auth_opts *auth,
    const char *cfg_arg, const struct plan *base, uint64_t seed, uint64_t budget_n,
    int64_t budget_ms, int64_t t0, int *failed)
{
	const struct cfg	*cfg = c->cfg;
	struct xfleet		 f = { .c = c, .proxy = c->proxy, .budget_n = budget_n,
				    .budget_ms = budget_ms, .t0 = t0 };
	struct coord_explore	 xe = { .seed = seed, .next = fleet_next,
				    .result = fleet_result, .lost = fleet_lost,
				    .done = fleet_done, .arg = &f };
	struct coord_opts	 co = { 0 };
	struct bundle		 b = { 0 };
	struct coord		*coord = NULL;
	struct server		*srv = NULL;
	char			 err[ERR_LEN], cfgabs[PATH_MAX], *run_id;
	volatile int		 stop = 0;

	*failed = 1;
	if (realpath(cfg_arg, cfgabs) == NULL) {
		printf("explore: %s: %s\n", cfg_arg, strerror(errno));
		return NULL;
	}
	fflush(stdout);
	if (coordinator_bundle(cfg_arg, cfg, c->outabs, false, auth, &b) == -1) {
		bundle_free(&b);
		return NULL;
	}
	f.plan_text = plan_dump(base);
	f.workers = json_object();
	run_id = xasprintf("explore-%d-%" PRId64, (int)getpid(), t0);
	co.cfg = cfg;
	co.explore = &xe;
	co.run_id = run_id;
	co.cfg_path = cfgabs;
	co.db_conninfo = "";
	co.keep_dir = "";
	co.workspace = "";
	co.heartbeat_ms = 500;
	co.lease_ttl_ms = 5000;
	co.bundle_hash = b.hash;
	co.bundle = b.data;
	co.bundle_len = b.len;
	if ((coord = coord_new(&co, err)) == NULL ||
	    (srv = server_open(listen, 1024, auth, err)) == NULL) {
		printf("explore: %s\n", err);
		goto done;
	}
	printf("  listening on %s for workers (soak worker --connect %s); the config "
	    "folder is bundled for them (sha256 %.12s)\n", server_url(srv),
	    server_url(srv), b.hash);
	fflush(stdout);
	*failed = 0;
	server_run(srv, coord, &stop, 500, fleet_tick, &f);
	if (xp_stop && f.stopped == NULL)
		f.stopped = xp_stop == SIGINT ? "Ctrl-C" : "SIGTERM";
	server_drain(srv, coord, xp_stop ? 0 : 10000, &stop);
	{
		const char	*k;
		json_t		*v;
		size_t		 nw = json_object_size(f.workers);

		printf("  %zu worker%s took part:", nw, nw == 1 ? "" : "s");
		json_object_foreach(f.workers, k, v)
			printf(" worker %s ran %" JSON_INTEGER_FORMAT, k,
			    json_integer_value(v));
		printf("\n");
	}
done:
	/* executions out and never answered are still unexplored */
	while (f.out.n > 0)
		stack_push(c->st, f.out.v[--f.out.n]);
	free(f.out.v);
	if (srv != NULL)
		server_close(srv);
	coord_free(coord);
	bundle_free(&b);
	free(f.plan_text);
	json_decref(f.workers);
	free(run_id);
	return f.stopped;
}

/*
 * explore.jsonl in the output folder (docs/explore.md, "Resuming"): a
 * header naming the exploration, then one line per execution taken, in
 * the order taken: its branch's number and its record.  Branches are
 * numbered in the order branch() makes them, which depends only on the
 * records taken before, so replaying the records in order rebuilds the
 * tree exactly: the counts, the classes, the failing plans and the
 * branches still to run (those leased out and never answered among them).
 * With resume, *replay gets the records and the file is appended to; a
 * last line cut short (the process killed while writing it) is dropped,
 * any other bad line is an error.
 */
static int
journal_open(const char *dir, bool resume, const struct cfg *cfg, uint64_t seed,
    const char *turns, long bound, bool reduce, long only_round, FILE **out,
    json_t **replay, char *err)
{
	char	*path = xasprintf("%s/explore.jsonl", dir), *text = NULL, *line, *nl;
	json_t	*head = json_pack("{s:i,s:s,s:I,s:s?,s:i,s:b,s:I}", "soak_explore_journal",
		    1, "config", cfg->name, "seed", (json_int_t)seed, "turns", turns,
		    "preemptions", (int)bound, "reduce", reduce, "round",
		    (json_int_t)only_round);
	size_t	 len = 0, lineno = 0, good = 0;
	int	 rc = -1;

	*out = NULL;
	*replay = NULL;
	if (resume) {
		json_t	*got, *j;

		if ((text = read_file(path, (size_t)1 << 30, &len, err)) == NULL)
			goto done;
		*replay = json_array();
		for (line = text; *line != '\0'; line = nl + 1) {
			bool	last;

			lineno++;
			if ((nl = strchr(line, '\n')) == NULL)
				nl = line + strlen(line);
			last = *nl == '\0' || nl[1] == '\0';
			j = json_loadb(line, (size_t)(nl - line), 0, NULL);
			if (lineno == 1) {
				got = j;
				if (j == NULL || !json_equal(j, head)) {
					char	*a = json_dumps(head, JSON_COMPACT | JSON_SORT_KEYS);
					char	*b = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) :
						    xstrdup("(not a journal's header)");

					errf(err, "%s is another exploration's: it says %s, "
					    "this one is %s", path, b, a);
					free(a);
					free(b);
					json_decref(got);
					goto done;
				}
				json_decref(got);
			} else if (j == NULL || !json_is_integer(json_object_get(j, "no")) ||
			    !json_is_object(json_object_get(j, "rec"))) {
				json_decref(j);
				if (last && *nl == '\0')
					break;	/* cut short: that execution runs again */
				errf(err, "%s:%zu: not an execution's line", path, lineno);
				goto done;
			} else
				json_array_append_new(*replay, j);
			good = (size_t)(nl - text) + (*nl == '\n');
			if (*nl == '\0')
				break;
		}
		if (lineno == 0) {
			errf(err, "%s is empty", path);
			goto done;
		}
		/* what follows the last whole line goes: the next line starts clean */
		if (truncate(path, (off_t)good) == -1 ||
		    (*out = fopen(path, "a")) == NULL ||
		    (good > 0 && text[good - 1] != '\n' && fputc('\n', *out) == EOF)) {
			errf(err, "%s: %s", path, strerror(errno));
			goto done;
		}
	} else {
		char	*h = json_dumps(head, JSON_COMPACT);

		if ((*out = fopen(path, "w")) == NULL || fprintf(*out, "%s\n", h) < 0 ||
		    fflush(*out) != 0) {
			errf(err, "%s: %s", path, strerror(errno));
			free(h);
			goto done;
		}
		free(h);
	}
	rc = 0;
done:
	if (rc == -1) {
		if (*out != NULL)
			fclose(*out);
		*out = NULL;
		json_decref(*replay);
		*replay = NULL;
	}
	json_decref(head);
	free(text);
	free(path);
	return rc;
}

/* The journal's records taken again, in order, into c's tree and counts. */
static int
journal_replay(struct xctx *c, const json_t *lines, char *err)
{
	const json_t	*j;
	struct xstack	*st = c->st;
	size_t		 i, k;

	c->replaying = true;
	json_array_foreach(lines, i, j) {
		uint64_t	no = (uint64_t)json_integer_value(json_object_get(j, "no"));
		struct xnode	node;
		struct xrec	rec;

		for (k = st->n; k > 0 && st->v[k - 1].no != no; k--)
			;
		if (k == 0) {
			c->replaying = false;
			return errf(err, "line %zu: an execution of branch %" PRIu64 ", "
			    "which this exploration never made (the config's turns or "
			    "this soak differ from the journal's)", i + 2, no);
		}
		node = st->v[k - 1];
		memmove(&st->v[k - 1], &st->v[k], (st->n - k) * sizeof(*st->v));
		st->n--;
		if (xp_rec_parse(json_object_get(j, "rec"), &rec, err) == -1) {
			c->replaying = false;
			free(node.steps);
			return -1;
		}
		take_rec(c, &node, &rec);
		xp_rec_clear(&rec);
		free(node.steps);
	}
	c->replaying = false;
	printf("  resumed: %zu execution%s from the journal; %zu branch%s left\n",
	    json_array_size(lines), json_array_size(lines) == 1 ? "" : "s", st->n,
	    st->n == 1 ? "" : "es");
	return 0;
}

int
cmd_explore(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed",	 required_argument, NULL, 's' },
		{ "turns",	 required_argument, NULL, 't' },
		{ "preemptions", required_argument, NULL, 'p' },
		{ "rounds",	 required_argument, NULL, 'r' },
		{ "budget",	 required_argument, NULL, 'b' },
		{ "workers",	 required_argument, NULL, 'w' },
		{ "out",	 required_argument, NULL, 'o' },
		{ "resume",	 required_argument, NULL, 'S' },
		{ "listen",	 required_argument, NULL, 'L' },
		{ "secret-file", required_argument, NULL, 'F' },
		{ "insecure",	 no_argument,	    NULL, 'I' },
		{ "tls-cert",	 required_argument, NULL, 'C' },
		{ "tls-client-ca", required_argument, NULL, 'A' },
		{ "no-reduce",	 no_argument,	    NULL, 'R' },
		{ "verbose",	 no_argument,	    NULL, 'v' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cfg		 cfg = { 0 };
	struct cfg_errors	 cerrs = { 0 };
	struct wrk		 w = { 0 };
	struct iso_db		 db = { 0 };
	struct seed_result	 res = { 0 };
	struct plan		 base = { 0 };
	struct plan_proxy	*pp = NULL;
	struct xstack		 st = { 0 };
	struct xnode		 root;
	struct xctx		 ctx;
	FILE			*journal = NULL;
	struct xstats		 x = { 0 };
	struct sigaction	 sa = { .sa_handler = xp_on_signal }, oint, oterm;
	const char		*seedarg = NULL, *turnsarg = NULL, *out = "soak-explore";
	const char		*proxy = NULL, *stopped = NULL, *resume = NULL;
	json_t			*replay = NULL;
	bool			 outarg = false;
	const char		*listen = NULL;
	struct auth_opts	 auth = { 0 };
	char			 err[ERR_LEN], outabs[PATH_MAX], *text, *p;
	json_t			*failing = NULL, *o, *cov, *pos, *never;
	bool			 verbose = false, *runs = NULL, no_reduce = false;
	bool			 reduce;
	uint64_t		 seed = 0, budget_n = 0, k;
	int64_t			 budget_ms = 0, t0;
	long			 bound = XP_DEFAULT_P, only_round = -1, nworkers = 1;
	size_t			 i, nsched = 0, deepest = 0;
	int			 ch, rc = SOAK_EXIT_REPLAY_INFRA, t, u;

	while ((ch = getopt_long(argc, argv, "s:t:p:r:b:w:o:S:L:F:IC:A:Rvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': seedarg = optarg; break;
		case 't': turnsarg = optarg; break;
		case 'p':
			errno = 0;
			bound = strtol(optarg, &p, 10);
			if (errno != 0 || *p != '\0' || p == optarg || bound < -1 ||
			    bound > 1000) {
				fprintf(stderr, "soak explore: --preemptions takes a number "
				    "from -1 (no bound) to 1000, not \"%s\"\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'r':
			errno = 0;
			only_round = strtol(optarg, &p, 10);
			if (errno != 0 || *p != '\0' || p == optarg || only_round < 0 ||
			    only_round > 100000) {
				fprintf(stderr, "soak explore: --rounds takes a round "
				    "number (0, 1, ...), not \"%s\"\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'b':
			if (optarg[0] != '\0' && strspn(optarg, "0123456789") ==
			    strlen(optarg)) {
				budget_n = strtoull(optarg, NULL, 10);
				if (budget_n == 0) {
					fprintf(stderr, "soak explore: --budget 0 runs "
					    "nothing\n");
					return SOAK_EXIT_USAGE;
				}
			} else if (parse_duration_ms(optarg, &budget_ms, err) == -1 ||
			    budget_ms <= 0) {
				fprintf(stderr, "soak explore: --budget takes a count of "
				    "executions or a duration (30s, 5m), not \"%s\"\n",
				    optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'w':
			errno = 0;
			nworkers = strtol(optarg, &p, 10);
			if (errno != 0 || *p != '\0' || p == optarg || nworkers < 1 ||
			    nworkers > 64) {
				fprintf(stderr, "soak explore: --workers takes 1 to 64, "
				    "not \"%s\"\n", optarg);
				return SOAK_EXIT_USAGE;
			}
			break;
		case 'o': out = optarg; outarg = true; break;
		case 'S': resume = optarg; break;
		case 'L': listen = optarg; break;
		case 'F': auth.secret_file = optarg; break;
		case 'I': auth.insecure = true; break;
		case 'C': auth.tls_cert = optarg; break;
		case 'A': auth.tls_client_ca = optarg; break;
		case 'R': no_reduce = true; break;
		case 'v': log_init("explore", 1); verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SOAK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "soak explore: %s\n", optind >= argc ? "which config? "
		    "soak explore CONFIG --seed N" : "one config only");
		usage(stderr);
		return SOAK_EXIT_USAGE;
	}
	if (seedarg == NULL) {
		fprintf(stderr, "soak explore: which seed? --seed N (its turns, turn "
		    "seeds and faults are the scenario explored)\n");
		return SOAK_EXIT_USAGE;
	}
	if (seed_parse(seedarg, &seed, err) == -1) {
		fprintf(stderr, "soak explore: --seed: %s\n", err);
		return SOAK_EXIT_USAGE;
	}
	if (listen == NULL && (auth.secret_file != NULL || auth.insecure ||
	    auth.tls_cert != NULL || auth.tls_client_ca != NULL)) {
		fprintf(stderr, "soak explore: --secret-file, --tls-* and --insecure "
		    "go with --listen URL\n");
		return SOAK_EXIT_USAGE;
	}
	if (listen != NULL) {
		char	warn[ERR_LEN];
		int	arc;

		if (nworkers != 1) {
			fprintf(stderr, "soak explore: --workers N runs executors here; "
			    "with --listen the workers are those that connect\n");
			return SOAK_EXIT_USAGE;
		}
		if (auth_secret_load(auth.secret_file, &auth.secret, err) == -1 ||
		    (arc = auth_policy(AUTH_COORDINATOR, listen, &auth, warn, err)) == -1 ||
		    tlsconf_check(AUTH_COORDINATOR, listen, &auth, err) == -1) {
			fprintf(stderr, "soak explore: %s\n", err);
			auth_secret_free(&auth.secret);
			return SOAK_EXIT_USAGE;
		}
		if (arc == 1)
			fprintf(stderr, "soak explore: warning: %s\n", warn);
	}
	if (cfg_load_file_all(argv[optind], &cfg, err, &cerrs) == -1) {
		cfg_errors_print(&cerrs, stderr, "soak");
		cfg_errors_free(&cerrs);
		return SOAK_EXIT_CONFIG;
	}
	for (i = 0; i < cfg.nproxies; i++)
		if (cfg.proxies[i].schedule.enabled) {
			proxy = cfg.proxies[i].name;
			nsched++;
		}
	if (nsched != 1) {
		fprintf(stderr, "soak explore: %s: %s\n", argv[optind], nsched == 0 ?
		    "no proxy has a schedule: nothing to explore (give the proxy "
		    "in front of the database a `schedule:`)" : "more than one proxy "
		    "has a schedule; explore drives one at a time");
		cfg_free(&cfg);
		return SOAK_EXIT_CONFIG;
	}
	if (only_round >= cfg.rounds) {
		fprintf(stderr, "soak explore: --rounds %ld: %s has rounds 0..%d\n",
		    only_round, argv[optind], cfg.rounds - 1);
		cfg_free(&cfg);
		return SOAK_EXIT_USAGE;
	}
	if (cfg.turns > XP_MAX_TURNS) {
		fprintf(stderr, "soak explore: %s has %d turns; explore takes at most "
		    "%d (give --turns)\n", argv[optind], cfg.turns, XP_MAX_TURNS);
		cfg_free(&cfg);
		return SOAK_EXIT_CONFIG;
	}
	runs = xcalloc((size_t)cfg.turns * (size_t)cfg.rounds, sizeof(*runs));
	if (turnsarg != NULL && parse_turns(turnsarg, &cfg, runs, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		free(runs);
		cfg_free(&cfg);
		return SOAK_EXIT_USAGE;
	}
	if (turnsarg == NULL) {
		free(runs);
		runs = NULL;
	}
	signal(SIGPIPE, SIG_IGN);
	if (resume != NULL && outarg) {
		fprintf(stderr, "soak explore: --resume DIR goes on in DIR: no --out\n");
		goto out;
	}
	if (resume != NULL)
		out = resume;
	if (mkdir_p(out, 0755, err) == -1 || realpath(out, outabs) == NULL) {
		fprintf(stderr, "soak explore: %s: %s\n", out, err);
		goto out;
	}
	reduce = !no_reduce && bound < 0;
	if (journal_open(outabs, resume != NULL, &cfg, seed, turnsarg, bound, reduce,
	    only_round, &journal, &replay, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		rc = resume != NULL ? SOAK_EXIT_USAGE : SOAK_EXIT_REPLAY_INFRA;
		goto out;
	}
	p = xasprintf("%s/failing", outabs);
	if (resume == NULL)
		rm_rf(p);
	if (mkdir_p(p, 0755, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		free(p);
		goto out;
	}
	free(p);
	if (iso_db_open(&db, &cfg, (int)nworkers, NULL, err) == -1) {
		fprintf(stderr, "soak explore: %s\n", err);
		goto out;
	}
	w.cfg = &cfg;
	w.run_id = xasprintf("explore%d", (int)getpid());
	w.id = 1;
	w.conninfo = xstrdup(db.conninfo);
	w.workspace = xasprintf("%s/soak-explore-%d", scratch_root(), (int)getpid());
	w.keep_dir = xasprintf("%s/failures", outabs);
	w.whole_trace = true;
	w.save_plan = true;
	if (wrk_open(&w, err) == -1) {
		printf("explore: cannot start: %s\n", err);
		wrk_close(&w, true);
		goto out;
	}

	/*
	 * The seed's own run, every turn, as a run would make it: its faults
	 * become every execution's (a plan keys them by what they hit, so
	 * they follow their exchanges into any order).
	 */
	printf("explore: %s, seed %" PRIu64 ", proxy %s, turns %s%s; bound: ",
	    cfg.name, seed, proxy, turnsarg ? turnsarg : "all", only_round >= 0 ?
	    ", one round" : "");
	if (bound < 0)
		printf("none (every interleaving)");
	else
		printf("at most %ld preemption%s", bound, bound == 1 ? "" : "s");
	/*
	 * Sleep sets and a preemption bound together can leave a class
	 * unexplored within the bound (its one representative under the sleep
	 * sets may need more preemptions than another of the class): the
	 * reduction runs only without a bound.
	 */
	printf("; reduction: %s\n", reduce ? "sleep sets" : no_reduce ? "none "
	    "(--no-reduce)" : "none (a preemption bound: sleep sets run only "
	    "without one)");
	fflush(stdout);
	w.keep_name = "seed";
	w.plan = NULL;
	wrk_run_seed(&w, seed, 1, &res);
	o = json_object_get(res.detail, "plan");
	if (!json_is_object(o)) {
		printf("explore: the seed made no plan (%s: %s): nothing to explore\n",
		    msg_verdict_name(res.verdict), res.message);
		seed_result_clear(&res);
		wrk_close(&w, true);
		goto out;
	}
	text = json_dumps(o, JSON_COMPACT);
	if (plan_parse(text, strlen(text), "the seed's plan", &base, err) == -1) {
		printf("explore: the seed's plan: %s\n", err);
		free(text);
		seed_result_clear(&res);
		wrk_close(&w, true);
		goto out;
	}
	free(text);
	if (runs != NULL) {
		free(base.runs);
		base.runs = runs;
		runs = NULL;
		printf("  the seed's faults are those of its own run of all turns, "
		    "applied to the turns that run\n");
	}
	seed_result_clear(&res);
	/* the scheduled proxy's entry: its steps are the prefix from now on */
	pp = xp_proxy_entry(&base, proxy);
	root = (struct xnode){ 0 };
	if (only_round > 0) {
		/* --rounds R: the rounds before R run once, as the seed ran them */
		root.steps = xcalloc(pp->nsteps + 1, sizeof(*root.steps));
		for (k = 0; k < pp->nsteps; k++) {
			const struct plan_step	*ps = &pp->steps[k];

			if (ps->round >= only_round || !plan_runs(&base, ps->round, ps->turn))
				continue;
			root.steps[root.n].round = ps->round;
			root.steps[root.n].turn = ps->turn;
			root.steps[root.n].key = ps->key;
			root.steps[root.n].occ = ps->occ;
			snprintf(root.steps[root.n].what, sizeof(root.steps[root.n].what),
			    "%s", ps->what ? ps->what : "exchange");
			root.n++;
		}
		printf("  rounds before %ld run once, as the seed ran them (%zu steps)\n",
		    only_round, root.n);
	}
	xp_prefix_start(pp);
	w.plan = &base;

	root.no = ++x.nodes;
	stack_push(&st, root);
	failing = json_array();
	ctx = (struct xctx){ .cfg = &cfg, .proxy = proxy, .outabs = outabs,
	    .config_arg = argv[optind], .st = &st, .x = &x, .failing = failing,
	    .bound = (int)bound, .only_round = (int)only_round, .reduce = reduce,
	    .verbose = verbose };
	if (replay != NULL && journal_replay(&ctx, replay, err) == -1) {
		printf("explore: --resume %s: %s\n", resume, err);
		rc = SOAK_EXIT_USAGE;
		if (nworkers == 1)
			wrk_close(&w, true);
		goto out;
	}
	ctx.journal = journal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &oint);
	sigaction(SIGTERM, &sa, &oterm);
	t0 = now_ms();
	if (nworkers == 1 && listen == NULL) {
		while (st.n > 0) {
			struct xnode	node = st.v[--st.n];
			struct xrec	rec;

			if (xp_stop || (budget_n > 0 && x.executions >= budget_n) ||
			    (budget_ms > 0 && now_ms() - t0 >= budget_ms)) {
				stopped = xp_stop == SIGINT ? "Ctrl-C" : xp_stop ?
				    "SIGTERM" : "the budget";
				st.n++;		/* still unexplored */
				break;
			}
			run_one(&ctx, &w, pp, seed, &node, x.executions + 1, &rec);
			if (xp_stop) {
				/* the signal reached the turns too: this one says nothing */
				xp_rec_clear(&rec);
				stopped = xp_stop == SIGINT ? "Ctrl-C" : "SIGTERM";
				stack_push(&st, node);
				break;
			}
			take_rec(&ctx, &node, &rec);
			xp_rec_clear(&rec);
			free(node.steps);
		}
	} else if (listen != NULL) {
		int	failed;

		/* the workers that connect run every execution */
		wrk_close(&w, true);
		stopped = explore_fleet(&ctx, listen, &auth, argv[optind], &base, seed,
		    budget_n, budget_ms, t0, &failed);
		if (failed) {
			rc = SOAK_EXIT_USAGE;
			goto out;
		}
	} else {
		/* the executors open workers of their own */
		wrk_close(&w, true);
		stopped = explore_parallel(&ctx, &w, &base, pp, seed, (int)nworkers,
		    budget_n, budget_ms, t0);
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	for (i = 0; i < st.n; i++)
		if (st.v[i].n > deepest)
			deepest = st.v[i].n;

	/* The result, said as what it is. */
	{
		bool		 complete = stopped == NULL && st.n == 0 && x.diverged == 0 &&
				    x.infra == 0 && x.no_alternative == 0;
		double		 secs = (double)(now_ms() - t0) / 1000.0;
		char		 bnd[96], rnd[48] = "";
		json_t		*j;

		if (only_round >= 0)
			snprintf(rnd, sizeof(rnd), " in round %ld", only_round);
		if (bound < 0)
			snprintf(bnd, sizeof(bnd), "%s", reduce ? "all schedules up to "
			    "equivalence" : "all schedules");
		else
			snprintf(bnd, sizeof(bnd), "all schedules with ≤ %ld preemption%s",
			    bound, bound == 1 ? "" : "s");
		printf("\n");
		if (complete)
			printf("complete: %s of turns %s%s — %" PRIu64 " explored, %"
			    PRIu64 " fail\n", bnd, turnsarg ? turnsarg : "all", rnd,
			    x.executions, x.failing);
		else {
			printf("incomplete: %s after %" PRIu64 " execution%s (%" PRIu64
			    " fail); %zu branch%s unexplored", stopped ? stopped :
			    x.diverged ? "executions diverged" : x.infra ?
			    "executions broke" : "waiting turns never went",
			    x.executions, x.executions == 1 ? "" : "s", x.failing, st.n,
			    st.n == 1 ? "" : "es");
			if (st.n > 0)
				printf(", the deepest at step %zu", deepest);
			if (x.diverged > 0 || x.infra > 0)
				printf("; %" PRIu64 " diverged and %" PRIu64 " broken "
				    "execution%s left their subtrees unexplored", x.diverged,
				    x.infra, x.diverged + x.infra == 1 ? "" : "s");
			printf("\n");
		}
		printf("  %" PRIu64 " distinct schedule%s in %zu equivalence class%s%s, %"
		    PRIu64 "..%" PRIu64 " steps, %.1f s (%.2f s an execution)\n",
		    x.distinct, x.distinct == 1 ? "" : "s", x.cn, x.cn == 1 ? "" : "es",
		    x.classes_cut ? " (longer ones not classed)" : "", x.steps_min,
		    x.steps_max, secs, x.executions ? (double)x.exec_ms / 1000.0 /
		    (double)x.executions : 0.0);
		if (reduce)
			printf("  reduction (sleep sets): %" PRIu64 " branch%s pruned as "
			    "equivalent, %" PRIu64 " execution%s covered from a step on\n",
			    x.slept, x.slept == 1 ? "" : "es", x.redundant,
			    x.redundant == 1 ? "" : "s");
		if (x.mixed > 0)
			printf("  warning: %" PRIu64 " equivalence class%s held both a "
			    "passing and a failing schedule: steps the rule says commute did "
			    "not (a read that writes through a view or a trigger?), or the "
			    "system is not deterministic; trust --no-reduce here\n",
			    x.mixed, x.mixed == 1 ? "" : "es");
		if (x.exec_ms > 0)
			printf("  of each execution, the turns ran %.0f %% (first start to "
			    "last end) and soak's own work (reset, setup, spawn, checks) "
			    "took the rest\n", 100.0 * (double)x.turns_ms / (double)x.exec_ms);
		if (bound >= 0)
			printf("  %" PRIu64 " branch%s beyond the bound, not run\n",
			    x.beyond_bound, x.beyond_bound == 1 ? "" : "es");
		printf("  not exact: %" PRIu64 " decision%s forced by a timeout, %" PRIu64
		    " commit%s that woke several lock waiters (PostgreSQL's order), %"
		    PRIu64 " deadlock%s resolved by PostgreSQL, %" PRIu64 " diverged, %"
		    PRIu64 " with a turn of several connections, %" PRIu64
		    " LISTEN/NOTIFY; %s; turns' own clocks and timeouts are not "
		    "observed\n", x.forced, x.forced == 1 ? "" : "s", x.wakes,
		    x.wakes == 1 ? "" : "s", x.pg_deadlocks, x.pg_deadlocks == 1 ? "" : "s",
		    x.diverged, x.several_conns, x.notify, cfg.nservices > 0 ?
		    "services persisted across executions (started once)" :
		    "no services");
		for (i = 0; i < x.nfps; i++)
			printf("  failing: %" PRIu64 " schedule%s with %s\n", x.fpcount[i],
			    x.fpcount[i] == 1 ? "" : "s", x.fps[i]);
		if (x.failing > x.saved)
			printf("  (%" PRIu64 " failing schedules not written: the first %d "
			    "are)\n", x.failing - x.saved, XP_SAVED_PLANS);

		cov = json_object();
		pos = json_array();
		for (i = 0; i < x.npos; i++)
			json_array_append_new(pos, json_pack("{s:i,s:o,s:o}", "step",
			    (int)i + 1, "seen", turnset_json(x.seen[i]), "tried",
			    turnset_json(x.tried[i])));
		json_object_set_new(cov, "positions", pos);
		never = json_array();
		for (t = 0; t < cfg.turns && t < XP_MAX_TURNS; t++)
			for (u = t + 1; u < cfg.turns && u < XP_MAX_TURNS; u++)
				if (plan_runs(&base, 0, t) && plan_runs(&base, 0, u) &&
				    !(x.raced[t] >> u & 1))
					json_array_append_new(never, json_pack("[i,i]", t, u));
		json_object_set_new(cov, "never_raced", never);
		j = json_pack("{s:i,s:s,s:I,s:s,s:s?,s:i,s:s,s:b,s:s?,s:I,s:I,s:I,"
		    "s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I},s:f,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:b},"
		    "s:o,s:O}",
		    "soak_explore", 1, "config", cfg.name, "seed", (json_int_t)seed,
		    "proxy", proxy, "turns", turnsarg, "preemptions", (int)bound,
		    "reduction", reduce ? "sleep sets" : "none", "complete", complete,
		    "stopped_by", stopped,
		    "executions", (json_int_t)x.executions,
		    "distinct_schedules", (json_int_t)x.distinct,
		    "failing", (json_int_t)x.failing,
		    "passing", (json_int_t)x.passing,
		    "pruned_equivalent", (json_int_t)x.slept,
		    "beyond_bound", (json_int_t)x.beyond_bound,
		    "unexplored", (json_int_t)st.n,
		    "deepest_unexplored", (json_int_t)deepest,
		    "steps", "min", (json_int_t)x.steps_min, "max", (json_int_t)x.steps_max,
		    "seconds", secs,
		    "inexact", "forced", (json_int_t)x.forced, "wakes", (json_int_t)x.wakes,
		    "postgres_deadlocks", (json_int_t)x.pg_deadlocks,
		    "diverged", (json_int_t)x.diverged, "infra", (json_int_t)x.infra,
		    "several_connections", (json_int_t)x.several_conns,
		    "services_persisted", cfg.nservices > 0,
		    "coverage", cov, "failing_schedules", failing);
		json_object_set_new(j, "no_alternative", json_integer((json_int_t)x.no_alternative));
		json_object_set_new(j, "notify", json_integer((json_int_t)x.notify));
		json_object_set_new(j, "round", only_round >= 0 ?
		    json_integer((json_int_t)only_round) : json_null());
		json_object_set_new(j, "execution_ms", json_integer((json_int_t)x.exec_ms));
		json_object_set_new(j, "covered_executions", json_integer((json_int_t)x.redundant));
		json_object_set_new(j, "classes", x.classes_cut ? json_null() :
		    json_integer((json_int_t)x.cn));
		json_object_set_new(j, "classes_mixed", json_integer((json_int_t)x.mixed));
		{
			/* the failing classes, as sorted digests: two explorations
			 * of one scenario compare by them */
			uint64_t	*fc = xcalloc(x.cn + 1, sizeof(*fc));
			json_t		*a = json_array();
			size_t		 nf = 0, q;
			char		 hex[24];

			for (q = 0; q < x.ccap; q++)
				if (x.cset[q] != 0 && (x.cverdict[q] & 2))
					fc[nf++] = x.cset[q];
			qsort(fc, nf, sizeof(*fc), cmp_u64);
			for (q = 0; q < nf; q++) {
				snprintf(hex, sizeof(hex), "%016" PRIx64, fc[q]);
				json_array_append_new(a, json_string(hex));
			}
			json_object_set_new(j, "failing_classes", a);
			free(fc);
		}
		json_object_set_new(j, "turns_ms", json_integer((json_int_t)x.turns_ms));
		p = xasprintf("%s/explore.json", outabs);
		if (json_dump_file(j, p, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == -1)
			printf("  cannot write %s\n", p);
		else
			printf("  result: %s\n", p);
		free(p);
		json_decref(j);
		rc = x.failing > 0 ? SOAK_EXIT_FAIL : complete ? SOAK_EXIT_PASS :
		    SOAK_EXIT_INCOMPLETE;
	}
	if (nworkers == 1 && listen == NULL)
		wrk_close(&w, true);
out:
	for (i = 0; i < st.n; i++)
		free(st.v[i].steps);
	free(st.v);
	if (w.workspace)
		rm_rf(w.workspace);
	iso_db_close(&db);
	free(w.run_id);
	free(w.conninfo);
	free(w.workspace);
	free(w.keep_dir);
	for (i = 0; i < x.nfps; i++)
		free(x.fps[i]);
	free(x.fps);
	free(x.fpcount);
	free(x.seen);
	free(x.tried);
	free(x.set);
	free(x.cset);
	free(x.cverdict);
	json_decref(failing);
	json_decref(replay);
	auth_secret_free(&auth.secret);
	if (journal != NULL)
		fclose(journal);
	free(runs);
	plan_free(&base);
	cfg_free(&cfg);
	return rc;
}
