/*
 * The explorer (worker/explore.h): the tree of branches, the search's
 * rules (preemptions, sleep sets, the independence rule), the checks a
 * record passes before it is taken, the counts and the journal; then the
 * local drivers, in this process or in forked executors over pipes.
 *
 * Map: the tree (nodes, the stack, prefixes) · the rule (explore_indep,
 * preempts) · branch() · classes and counts · checking a record · taking
 * it · the journal · executors.
 */
#include "worker/explore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "common/log.h"
#include "common/msg.h"
#include "common/util.h"
#include "common/verdict.h"

#define XP_CLASS_MAX_STEPS	512	/* longer schedules are not classed */

/*
 * A branch.  Its prefix is its parent's record's steps [0, at), then the
 * parent's step alt (another turn's exchange that was waiting at step at)
 * with step at's cand.  The root has no parent: its prefix is its own
 * steps until it is taken.  Once taken, a node keeps its record's steps
 * while a branch of it is pending (refs).
 */
struct xnode {
	struct xnode	*parent;
	struct xstep	*steps;		/* the root's prefix; a taken node's record */
	uint32_t	 nsteps;
	uint32_t	 at, alt;
	uint32_t	 n;		/* its prefix's length */
	uint32_t	 refs;		/* pending branches of it, + 1 until taken */
	int		 preemptions;
	uint8_t		 refused;	/* its records refused so far */
	uint64_t	 no;
	uint64_t	 sleep;		/* turns asleep after the prefix (reduction) */
};

struct explore {
	struct explore_opts	 o;
	struct xnode		**st;		/* the stack: the last runs next */
	size_t			 nst, capst;
	struct xstats		 x;
	/* equivalence classes and their verdicts (bit 0 passed, bit 1 failed) */
	uint64_t		*cset;
	uint8_t			*cverdict;
	size_t			 ccap, cn;
	/* distinct schedules: their digests */
	uint64_t		*set;
	size_t			 setcap, setn;
	/* coverage: per step position, the turns seen waiting and taken */
	uint64_t		*seen, *tried;
	size_t			 npos;
	uint64_t		 raced[XP_MAX_TURNS];
	/* the failing executions' fingerprints, counted */
	char			**fps;
	uint64_t		*fpcount;
	size_t			 nfps;
	json_t			*failing;	/* failing_schedules */
	FILE			*journal;
	bool			 journal_failed;
	bool			 replaying;
};

/* ---- the tree ---- */

static struct xnode *
node_new(struct xnode *parent)
{
	struct xnode	*b = xcalloc(1, sizeof(*b));

	b->parent = parent;
	b->refs = 1;
	if (parent != NULL)
		parent->refs++;
	return b;
}

/* One reference to b gone: b, and ancestors nobody needs, freed. */
static void
node_release(struct xnode *b)
{
	struct xnode	*up;

	while (b != NULL && --b->refs == 0) {
		up = b->parent;
		free(b->steps);
		free(b);
		b = up;
	}
}

static void
push(struct explore *x, struct xnode *b)
{
	if (x->nst == x->capst) {
		x->capst = x->capst ? x->capst * 2 : 64;
		x->st = xreallocarray(x->st, x->capst, sizeof(*x->st));
	}
	x->st[x->nst++] = b;
}

size_t
explore_prefix(const struct xnode *b, struct xstep **out)
{
	struct xstep	*s = xcalloc((size_t)b->n + 1, sizeof(*s));

	if (b->parent == NULL)
		memcpy(s, b->steps, (size_t)b->n * sizeof(*s));
	else {
		memcpy(s, b->parent->steps, (size_t)b->at * sizeof(*s));
		s[b->at] = b->parent->steps[b->alt];
		s[b->at].cand = b->parent->steps[b->at].cand;
	}
	*out = s;
	return b->n;
}

uint64_t
explore_node_no(const struct xnode *b)
{
	return b->no;
}

struct explore *
explore_new(const struct explore_opts *o, const struct xstep *root, size_t nroot)
{
	struct explore		*x = xcalloc(1, sizeof(*x));
	struct xnode		*b;

	x->o = *o;
	x->failing = json_array();
	b = node_new(NULL);
	b->n = b->nsteps = (uint32_t)nroot;
	b->steps = xcalloc(nroot + 1, sizeof(*b->steps));
	if (nroot > 0)	/* root may be NULL then: memcpy's NULL is undefined */
		memcpy(b->steps, root, nroot * sizeof(*root));
	b->no = ++x->x.nodes;
	push(x, b);
	return x;
}

void
explore_free(struct explore *x)
{
	size_t	i;

	if (x == NULL)
		return;
	for (i = 0; i < x->nst; i++)
		node_release(x->st[i]);
	free(x->st);
	for (i = 0; i < x->nfps; i++)
		free(x->fps[i]);
	free(x->fps);
	free(x->fpcount);
	free(x->seen);
	free(x->tried);
	free(x->set);
	free(x->cset);
	free(x->cverdict);
	json_decref(x->failing);
	free(x);
}

struct xnode *
explore_next(struct explore *x)
{
	return x->nst > 0 ? x->st[--x->nst] : NULL;
}

struct xnode *
explore_find(struct explore *x, uint64_t no)
{
	struct xnode	*b;
	size_t		 k;

	for (k = x->nst; k > 0 && x->st[k - 1]->no != no; k--)
		;
	if (k == 0)
		return NULL;
	b = x->st[k - 1];
	memmove(&x->st[k - 1], &x->st[k], (x->nst - k) * sizeof(*x->st));
	x->nst--;
	return b;
}

void
explore_put_back(struct explore *x, struct xnode *b)
{
	push(x, b);
}

size_t
explore_left(const struct explore *x)
{
	return x->nst;
}

size_t
explore_deepest(const struct explore *x)
{
	size_t	i, d = 0;

	for (i = 0; i < x->nst; i++)
		if (x->st[i]->n > d)
			d = x->st[i]->n;
	return d;
}

const struct xstats *
explore_stats(const struct explore *x)
{
	return &x->x;
}

/* ---- the rule ---- */

/*
 * Whether two steps of two turns commute (the header's "reduction"): a
 * BEGIN or a session setting commutes with anything of another session,
 * two plain reads with each other; everything else, and a step not known,
 * is dependent.
 */
bool
explore_indep(const struct xstep *a, const struct xstep *b)
{
	if (a == NULL || b == NULL || a->turn == b->turn)
		return false;
	if (a->cls == XC_BEGIN || b->cls == XC_BEGIN || a->cls == XC_SESSION ||
	    b->cls == XC_SESSION)
		return true;
	return a->cls == XC_READ && b->cls == XC_READ;
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

/* ---- branch() ---- */

/*
 * Where each turn's next step is, from each position of the record: the
 * turn's exchange waiting there (pending).  nx[(j - from) * XP_MAX_TURNS
 * + u] is the first step at or after j that is u's, n when none: a table
 * of (n - from + 1) rows, built backwards once, so that branch() is
 * O(steps x turns) however the record was made.
 */
static uint32_t *
next_table(const struct xstep *s, size_t from, size_t n)
{
	uint32_t	*nx = xcalloc((n - from + 1) * XP_MAX_TURNS, sizeof(*nx));
	size_t		 j;
	int		 u;

	for (u = 0; u < XP_MAX_TURNS; u++)
		nx[(n - from) * XP_MAX_TURNS + u] = (uint32_t)n;
	for (j = n; j-- > from;) {
		memcpy(&nx[(j - from) * XP_MAX_TURNS], &nx[(j + 1 - from) * XP_MAX_TURNS],
		    XP_MAX_TURNS * sizeof(*nx));
		nx[(j - from) * XP_MAX_TURNS + s[j].turn] = (uint32_t)j;
	}
	return nx;
}

/* Turn u's step waiting at position j (j >= from), or NULL. */
static const struct xstep *
pending(const struct xstep *s, size_t n, const uint32_t *nx, size_t from, size_t j,
    int u)
{
	uint32_t	k;

	if (j > n)
		return NULL;
	k = nx[(j - from) * XP_MAX_TURNS + u];
	return k < n ? &s[k] : NULL;
}

/*
 * The branches of node's execution s[0..n) (node's prefix extended): at
 * every step past the prefix, each other turn that was waiting, as the
 * exchange it had waiting (its next step in this execution), within the
 * bound; with the reduction, the sleep sets of the header.  They are
 * pushed from the deepest, so the shallowest runs first; node keeps s
 * while they are pending.
 */
static void
branch(struct explore *x, struct xnode *node, const struct xstep *s, size_t n)
{
	const bool	 reduce = x->o.reduce;
	int		*pc = xcalloc(n + 1, sizeof(*pc));
	uint32_t	*nx = next_table(s, node->n, n);
	struct xnode	**kids = NULL;
	size_t		 i, nk = 0, capk = 0;
	uint64_t	 zz = node->sleep, done, nz;
	int		 t, u, d;

	for (i = 1; i <= n; i++)
		pc[i] = pc[i - 1] + (preempts(s, i - 1, s[i - 1].turn) ? 1 : 0);
	for (i = node->n; i < n; i++) {
		d = s[i].turn;
		if (reduce && (zz >> d & 1)) {
			x->x.redundant++;
			break;
		}
		done = (uint64_t)1 << d;
		for (t = 0; t < XP_MAX_TURNS && !(x->o.only_round >= 0 &&
		    s[i].round != x->o.only_round); t++) {
			const struct xstep	*e;
			struct xnode		*child;
			int			 p;

			if (!(s[i].cand >> t & 1) || t == d)
				continue;
			if (reduce && (zz >> t & 1)) {
				x->x.slept++;
				continue;
			}
			p = pc[i] + (preempts(s, i, t) ? 1 : 0);
			if (x->o.bound >= 0 && p > x->o.bound) {
				x->x.beyond_bound++;
				continue;
			}
			if ((e = pending(s, n, nx, node->n, i + 1, t)) == NULL) {
				x->x.no_alternative++;
				continue;
			}
			child = node_new(node);
			child->no = ++x->x.nodes;
			child->at = (uint32_t)i;
			child->alt = (uint32_t)(e - s);
			child->n = (uint32_t)i + 1;
			child->preemptions = p;
			for (u = 0; reduce && u < XP_MAX_TURNS; u++)
				if (((zz | done) >> u & 1) &&
				    explore_indep(pending(s, n, nx, node->n, i, u), e))
					child->sleep |= (uint64_t)1 << u;
			if (nk == capk) {
				capk = capk ? capk * 2 : 16;
				kids = xreallocarray(kids, capk, sizeof(*kids));
			}
			kids[nk++] = child;
			done |= (uint64_t)1 << t;
		}
		for (u = 0, nz = 0; reduce && u < XP_MAX_TURNS; u++)
			if ((zz >> u & 1) &&
			    explore_indep(pending(s, n, nx, node->n, i + 1, u), &s[i]))
				nz |= (uint64_t)1 << u;
		zz = nz;
	}
	if (nk > 0) {
		/* the kids rebuild their prefixes from these steps */
		free(node->steps);
		node->steps = xcalloc(n + 1, sizeof(*s));
		memcpy(node->steps, s, n * sizeof(*s));
		node->nsteps = (uint32_t)n;
	}
	while (nk > 0)
		push(x, kids[--nk]);
	free(kids);
	free(nx);
	free(pc);
}

/* ---- classes and counts ---- */

/* Whether d was not in the set (then it is now). */
static bool
set_add(struct explore *x, uint64_t d)
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

/*
 * The schedule's equivalence class: its lexicographic normal form under
 * explore_indep (at each place the lowest turn whose next step commutes with
 * every step left before it), as a digest.  0: too long to class.
 */
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
				if (!used[l] && !explore_indep(&s[l], &s[i]))
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
class_add(struct explore *x, uint64_t d, int verdict_bit)
{
	size_t	i;

	if (d == 0) {
		x->x.classes_cut = true;
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
		x->x.mixed = 0;
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
		x->x.mixed++;
	x->cverdict[i] |= (uint8_t)verdict_bit;
	x->x.nclasses = x->cn;
}

static void
coverage_add(struct explore *x, const struct xstep *s, size_t n)
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
fp_count(struct explore *x, const char *fp)
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

char *
explore_turn_list(const struct xstep *s, size_t n)
{
	char	*buf = xcalloc(n * 4 + 1, 1);
	size_t	 i, o = 0;

	for (i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, n * 4 + 1 - o, "%s%d", i ? " " : "",
		    s[i].turn);
	return buf;
}

/*
 * Steps at which a request to a service was held while another ran to its
 * reply: another turn waiting at a step that is not a PostgreSQL
 * statement (the header's "Exact").  A statement is PostgreSQL's unit of
 * work, and its lock waits are seen; a request is not: held until
 * another's reply, the service ran one at once.
 */
static size_t
serialized_steps(const struct xstep *s, size_t n, uint64_t turns)
{
	size_t	i, k = 0;

	for (i = 0; i < n; i++)
		k += (s[i].flags & XS_SERVICE) && __builtin_popcountll(s[i].cand &
		    turns & ~((uint64_t)1 << s[i].turn)) > 0;
	return k;
}

void
explore_seed_facts(const struct explore_opts *o, const struct xrec *r, size_t *steps,
    uint64_t *overlap, bool *serialized)
{
	size_t	i;

	*steps = 0;
	for (i = 0; r->has_steps && i < r->n; i++)
		*steps += (o->turns >> r->steps[i].turn & 1) != 0;
	*overlap = r->inexact.overlap & o->turns;
	*serialized = r->has_steps && serialized_steps(r->steps, r->n, o->turns) > 0;
}

/* ---- checking a record ---- */

/* The same exchange: what a plan or a prefix names a step by. */
static bool
same_step(const struct xstep *a, int round, int turn, uint64_t key, uint32_t occ)
{
	return a->round == round && a->turn == turn && a->key == key && a->occ == occ;
}

/*
 * A failing record's plan: a plan of this config and seed (plan_check)
 * whose steps at the scheduled proxy are the record's.
 */
static int
check_plan(const struct explore *x, const struct xrec *r, char *err)
{
	struct plan			 p;
	const struct plan_proxy		*pp;
	size_t				 i;
	int				 rc = 0;

	if (plan_check(r->plan, x->o.cfg, x->o.seed, "its plan", &p, err) == -1)
		return -1;
	pp = plan_proxy(&p, x->o.proxy);
	if ((pp == NULL ? 0 : pp->nsteps) != r->n)
		rc = errf(err, "its plan has %zu steps at proxy %s, the record %zu",
		    pp == NULL ? (size_t)0 : pp->nsteps, x->o.proxy, r->n);
	for (i = 0; rc == 0 && i < r->n; i++)
		if (!same_step(&r->steps[i], pp->steps[i].round, pp->steps[i].turn,
		    pp->steps[i].key, pp->steps[i].occ))
			rc = errf(err, "its plan's step %zu is not the record's", i + 1);
	plan_free(&p);
	return rc;
}

/*
 * Whether r can be b's execution (the header's "Records"); -1 with err
 * saying why not.  A record without steps, or an infra one, branches
 * nothing and is counted broken: only its form matters.
 */
static int
check_rec(const struct explore *x, const struct xnode *b, const struct xrec *r,
    char *err)
{
	struct xstep	*pre = NULL;
	size_t		 i, n;
	int		 rc = 0;

	if (!reason_valid(r->verdict, (int)r->reason))
		return errf(err, "verdict %d with reason %s", r->verdict,
		    reason_name(r->reason));
	if (r->verdict == VERDICT_PASS && (r->invariants != NULL || r->plan != NULL))
		return errf(err, "a pass that carries a failure's invariants or plan");
	if (r->verdict == VERDICT_FAIL && r->reason == REASON_INVARIANT &&
	    json_array_size(r->invariants) == 0)
		return errf(err, "a failure by invariant that names none");
	if (!r->has_steps || r->verdict == VERDICT_INFRA)
		return 0;
	if (r->n > XP_MAX_STEPS)
		return errf(err, "%zu steps, more than %d", r->n, XP_MAX_STEPS);
	if (r->n == 0 && x->o.seed_steps)
		return errf(err, "no step, where the seed's own run took some");
	n = explore_prefix(b, &pre);
	if (r->n < n)
		rc = errf(err, "%zu steps, shorter than its prefix of %zu", r->n, n);
	for (i = 0; rc == 0 && i < n; i++)
		if (!same_step(&r->steps[i], pre[i].round, pre[i].turn, pre[i].key,
		    pre[i].occ))
			rc = errf(err, "its step %zu is not its prefix's (turn %d, not "
			    "%d)", i + 1, r->steps[i].turn, pre[i].turn);
	free(pre);
	for (i = 0; rc == 0 && i < r->n; i++) {
		const struct xstep	*s = &r->steps[i];

		if (!(x->o.turns >> s->turn & 1))
			rc = errf(err, "step %zu is turn %d's, which does not run", i + 1,
			    s->turn);
		else if (!(s->cand >> s->turn & 1))
			rc = errf(err, "step %zu is turn %d's, which was not waiting "
			    "then (cand %" PRIx64 ")", i + 1, s->turn, s->cand);
		else if ((s->cand & ~x->o.turns) != 0)
			rc = errf(err, "step %zu says turns waited that do not run "
			    "(cand %" PRIx64 ")", i + 1, s->cand);
		else if (s->round < 0 || s->round >= x->o.cfg->rounds)
			rc = errf(err, "step %zu is of round %d", i + 1, s->round);
	}
	if (rc == 0 && r->plan != NULL && check_plan(x, r, err) == -1)
		rc = -1;
	return rc;
}

/* ---- taking a record ---- */

static void
say(struct explore *x, struct xp_event_info *ev)
{
	ev->replaying = x->replaying;
	ev->execution = x->x.executions;
	if (x->o.event != NULL)
		x->o.event(x->o.arg, ev);
}

/* The journal's line for an execution taken, made durable. */
static void
journal_rec(struct explore *x, const struct xnode *b, const struct xrec *r)
{
	json_t	*j;
	char	*text;

	if (x->journal == NULL || x->replaying)
		return;
	j = json_pack("{s:I,s:o}", "no", (json_int_t)b->no, "rec", xp_rec_json(r));
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (text == NULL || fprintf(x->journal, "%s\n", text) < 0 ||
	    fflush(x->journal) != 0 || fdatasync(fileno(x->journal)) == -1) {
		if (!x->journal_failed) {
			struct xp_event_info	ev = { .kind = XE_BROKEN, .why =
				    "cannot write the journal: a resume would run these "
				    "executions again" };

			say(x, &ev);
		}
		x->journal_failed = true;
	}
	free(text);
}

/*
 * A failing execution's plan (checked), with its fingerprint, as
 * failing/K.plan.json in the failing folder: made anew, never through a
 * symlink planted there.  NULL when it was not written.
 */
static char *
save_failing(struct explore *x, const struct xrec *r, const char *fp, uint64_t k)
{
	json_t	*plan, *failure;
	char	*text, name[48], err[ERR_LEN];
	int	 fd;
	bool	 ok;

	if (!json_is_object(r->plan) || x->o.failing_dfd < 0)
		return NULL;
	plan = json_deep_copy(r->plan);
	failure = json_object_get(plan, "failure");
	if (!json_is_object(failure)) {
		failure = json_object();
		json_object_set_new(plan, "failure", failure);
	}
	json_object_set_new(failure, "fingerprint", json_string(fp));
	json_object_set_new(failure, "message", json_string(r->message));
	text = json_dumps(plan, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(plan);
	snprintf(name, sizeof(name), "%" PRIu64 ".plan.json", k);
	fd = text != NULL ? file_create_at(x->o.failing_dfd, name, 0644, err) : -1;
	ok = fd != -1 && write_all(fd, text, strlen(text)) == 0 && write_all(fd, "\n",
	    1) == 0;
	if (fd != -1 && close(fd) == -1)
		ok = false;
	free(text);
	if (!ok) {
		struct xp_event_info	ev = { .kind = XE_BROKEN, .why = fd == -1 ?
			    err : "cannot write a failing plan" };

		say(x, &ev);
		return NULL;
	}
	return xasprintf("%s/%s", x->o.failing_path, name);
}

/* An execution that says nothing of its subtree: counted, said. */
static void
broken(struct explore *x, const struct xrec *r, const char *why)
{
	struct xp_event_info	ev = { .kind = XE_BROKEN, .rec = r, .why = why };

	x->x.infra++;
	say(x, &ev);
}

static void
take_failing(struct explore *x, const struct xnode *b, const struct xrec *r,
    const char *tl)
{
	char	*fp, *p;

	x->x.failing++;
	fp = x->o.fingerprint != NULL ? x->o.fingerprint(x->o.cfg->name,
	    reason_name(r->reason), r->invariants) : xstrdup(reason_name(r->reason));
	fp_count(x, fp);
	p = x->x.saved < XP_SAVED_PLANS ? save_failing(x, r, fp, x->x.failing) : NULL;
	if (p != NULL) {
		struct xp_event_info	ev = { .kind = XE_FAILING, .rec = r, .turns = tl,
			    .plan = p, .failing = x->x.failing, .prefix = b->n,
			    .preemptions = b->preemptions };

		x->x.saved++;
		json_array_append_new(x->failing, json_pack("{s:s,s:s,s:s,s:i,s:s}",
		    "plan", p, "fingerprint", fp, "turns", tl, "preemptions",
		    b->preemptions, "message", r->message));
		say(x, &ev);
	}
	free(p);
	free(fp);
}

/* A checked record into the counts, the failing plans and the tree. */
static void
take(struct explore *x, struct xnode *b, const struct xrec *r)
{
	const struct xstep	*s = r->steps;
	size_t			 n = r->n;
	struct xp_event_info	 ev = { .kind = XE_EXECUTION, .rec = r, .prefix = b->n,
				    .preemptions = b->preemptions, .node = b->no };
	char			*tl;
	bool			 inexact;
	size_t			 ser;

	journal_rec(x, b, r);
	x->x.exec_ms += r->ms;
	x->x.turns_ms += r->turns_ms;
	x->x.executions++;
	x->x.forced += r->inexact.forced;
	x->x.wakes += r->inexact.wakes;
	x->x.pg_deadlocks += r->inexact.pg_deadlocks;
	x->x.soak_deadlocks += r->inexact.soak_deadlocks;
	x->x.notify += r->inexact.notify;
	if (!r->has_steps) {
		char	why[300];

		snprintf(why, sizeof(why), "no schedule read (%s)", r->why_no_steps);
		broken(x, r, why);
		return;
	}
	ser = serialized_steps(s, n, x->o.turns);
	x->x.overlap += (r->inexact.overlap & x->o.turns) != 0;
	x->x.serialized += ser > 0;
	x->x.unordered += r->inexact.unordered > 0;
	inexact = r->inexact.forced || r->inexact.wakes || r->inexact.pg_deadlocks ||
	    r->inexact.notify || (r->inexact.overlap & x->o.turns) || ser > 0 ||
	    r->inexact.unordered > 0 || r->reason == REASON_DIVERGED;
	x->x.inexact += inexact;
	x->x.distinct += set_add(x, schedule_digest(s, n));
	x->x.steps_sum += n;
	if (x->x.executions == 1 || n < x->x.steps_min)
		x->x.steps_min = n;
	if (n > x->x.steps_max)
		x->x.steps_max = n;
	coverage_add(x, s, n);
	tl = explore_turn_list(s, n);
	ev.turns = tl;
	say(x, &ev);
	if (r->verdict == VERDICT_PASS || r->verdict == VERDICT_FAIL)
		class_add(x, class_digest(s, n), r->verdict == VERDICT_PASS ? 1 : 2);
	if (r->reason == REASON_DIVERGED) {
		/* the scenario did not do again what it did: the branch is lost */
		ev.kind = XE_DIVERGED;
		x->x.diverged++;
		say(x, &ev);
	} else if (r->verdict == VERDICT_FAIL) {
		take_failing(x, b, r, tl);
		branch(x, b, s, n);
	} else if (r->verdict == VERDICT_PASS) {
		x->x.passing++;
		branch(x, b, s, n);
	} else	/* a record may say nothing: its reason's words then */
		broken(x, r, r->message[0] != '\0' ? r->message :
		    reason_what(r->reason));
	free(tl);
}

void
explore_refuse(struct explore *x, struct xnode *b, const struct xrec *r,
    const char *why)
{
	struct xp_event_info	ev = { .kind = XE_REFUSED, .rec = r, .why = why,
		    .again = b->refused > 0, .prefix = b->n };

	x->x.refused++;
	say(x, &ev);
	if (b->refused++ == 0) {
		push(x, b);	/* run again, elsewhere when there is one */
		return;
	}
	x->x.infra++;
	node_release(b);
}

int
explore_take(struct explore *x, struct xnode *b, const struct xrec *r, char *err)
{
	if (check_rec(x, b, r, err) == -1) {
		explore_refuse(x, b, r, err);
		return -1;
	}
	take(x, b, r);
	node_release(b);
	return 0;
}

bool
explore_complete(const struct explore *x, const char *stopped)
{
	return stopped == NULL && x->nst == 0 && x->x.infra == 0 &&
	    x->x.diverged == 0 && x->x.no_alternative == 0 && x->x.inexact == 0;
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

/* The failing classes, as sorted digests: two explorations compare by them. */
static json_t *
failing_classes(const struct explore *x)
{
	uint64_t	*fc = xcalloc(x->cn + 1, sizeof(*fc));
	json_t		*a = json_array();
	size_t		 nf = 0, q;
	char		 hex[24];

	for (q = 0; q < x->ccap; q++)
		if (x->cset[q] != 0 && (x->cverdict[q] & 2))
			fc[nf++] = x->cset[q];
	if (nf > 0)
		qsort(fc, nf, sizeof(*fc), cmp_u64);
	for (q = 0; q < nf; q++) {
		snprintf(hex, sizeof(hex), "%016" PRIx64, fc[q]);
		json_array_append_new(a, json_string(hex));
	}
	free(fc);
	return a;
}

json_t *
explore_json(const struct explore *x, const char *stopped)
{
	const struct xstats	*s = &x->x;
	json_t			*j, *cov, *pos, *never, *fps;
	size_t			 i;
	int			 t, u;

	cov = json_object();
	pos = json_array();
	for (i = 0; i < x->npos; i++)
		json_array_append_new(pos, json_pack("{s:i,s:o,s:o}", "step",
		    (int)i + 1, "seen", turnset_json(x->seen[i]), "tried",
		    turnset_json(x->tried[i])));
	json_object_set_new(cov, "positions", pos);
	never = json_array();
	for (t = 0; t < XP_MAX_TURNS; t++)
		for (u = t + 1; u < XP_MAX_TURNS; u++)
			if ((x->o.turns >> t & 1) && (x->o.turns >> u & 1) &&
			    !(x->raced[t] >> u & 1))
				json_array_append_new(never, json_pack("[i,i]", t, u));
	json_object_set_new(cov, "never_raced", never);
	j = json_pack("{s:s,s:b,s:s?,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
	    "s:{s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b},s:o,s:O}",
	    "reduction", x->o.reduce ? "sleep sets" : "none",
	    "complete", explore_complete(x, stopped), "stopped_by", stopped,
	    "executions", (json_int_t)s->executions,
	    "distinct_schedules", (json_int_t)s->distinct,
	    "failing", (json_int_t)s->failing,
	    "passing", (json_int_t)s->passing,
	    "pruned_equivalent", (json_int_t)s->slept,
	    "beyond_bound", (json_int_t)s->beyond_bound,
	    "unexplored", (json_int_t)x->nst,
	    "deepest_unexplored", (json_int_t)explore_deepest(x),
	    "refused", (json_int_t)s->refused,
	    "inexact_executions", (json_int_t)s->inexact,
	    "steps", "min", (json_int_t)s->steps_min, "max", (json_int_t)s->steps_max,
	    "inexact", "forced", (json_int_t)s->forced, "wakes", (json_int_t)s->wakes,
	    "postgres_deadlocks", (json_int_t)s->pg_deadlocks,
	    "diverged", (json_int_t)s->diverged, "infra", (json_int_t)s->infra,
	    "overlapping_connections", (json_int_t)s->overlap,
	    "serialized", (json_int_t)s->serialized,
	    "unordered", (json_int_t)s->unordered,
	    "notify", (json_int_t)s->notify,
	    "no_alternative", (json_int_t)s->no_alternative,
	    "soak_deadlocks", (json_int_t)s->soak_deadlocks,
	    "services_persisted", cfg_services_direct(x->o.cfg) > 0,
	    "coverage", cov, "failing_schedules", x->failing);
	json_object_set_new(j, "no_alternative", json_integer((json_int_t)s->no_alternative));
	json_object_set_new(j, "execution_ms", json_integer((json_int_t)s->exec_ms));
	json_object_set_new(j, "turns_ms", json_integer((json_int_t)s->turns_ms));
	json_object_set_new(j, "covered_executions", json_integer((json_int_t)s->redundant));
	json_object_set_new(j, "classes", s->classes_cut ? json_null() :
	    json_integer((json_int_t)x->cn));
	json_object_set_new(j, "classes_mixed", json_integer((json_int_t)s->mixed));
	json_object_set_new(j, "failing_classes", failing_classes(x));
	fps = json_array();
	for (i = 0; i < x->nfps; i++)
		json_array_append_new(fps, json_pack("{s:s,s:I}", "fingerprint",
		    x->fps[i], "schedules", (json_int_t)x->fpcount[i]));
	json_object_set_new(j, "failing_fingerprints", fps);
	return j;
}

/* ---- the root ---- */

size_t
explore_root_prefix(const struct plan *p, const struct plan_proxy *pp, int round,
    struct xstep **out)
{
	struct xstep	*s = xcalloc((pp ? pp->nsteps : 0) + 1, sizeof(*s));
	size_t		 k, n = 0;

	for (k = 0; round > 0 && pp != NULL && k < pp->nsteps; k++) {
		const struct plan_step	*ps = &pp->steps[k];

		/* round R's own steps are what is explored: never the root's */
		if (ps->round >= round || !plan_runs(p, ps->round, ps->turn))
			continue;
		s[n].round = ps->round;
		s[n].turn = ps->turn;
		s[n].key = ps->key;
		s[n].occ = ps->occ;
		s[n].cand = ps->has_cand ? ps->cand : (uint64_t)1 << ps->turn;
		xp_step_what(&s[n], ps->what);	/* valid UTF-8, cut whole */
		n++;
	}
	*out = s;
	return n;
}

/* ---- the journal ---- */

json_t *
explore_journal_header(const struct explore_opts *o, const char *turns)
{
	return json_pack("{s:i,s:s,s:I,s:s?,s:i,s:b,s:I}", "soak_explore_journal",
	    XP_JOURNAL_VERSION, "config", o->cfg->name, "seed", (json_int_t)o->seed,
	    "turns", turns, "preemptions", o->bound, "reduce", o->reduce, "round",
	    (json_int_t)o->only_round);
}

void
explore_journal_set(struct explore *x, FILE *f)
{
	x->journal = f;
	x->journal_failed = false;
}

size_t
explore_journal_replay(struct explore *x, const json_t *lines)
{
	const json_t	*j;
	size_t		 i, taken = 0;
	char		 err[ERR_LEN], why[ERR_LEN + 64];

	x->replaying = true;
	json_array_foreach(lines, i, j) {
		const json_t	*no = json_object_get(j, "no");
		struct xnode	*b;
		struct xrec	 rec;

		b = json_is_integer(no) ? explore_find(x, (uint64_t)json_integer_value(no)) :
		    NULL;
		if (b == NULL) {
			struct xp_event_info	ev = { .kind = XE_REFUSED, .why = why };

			snprintf(why, sizeof(why), "journal line %zu: an execution of "
			    "branch %" JSON_INTEGER_FORMAT ", which this tree does not "
			    "hold", i + 2, json_integer_value(no));
			x->x.refused++;
			say(x, &ev);
			continue;
		}
		if (xp_rec_parse(json_object_get(j, "rec"), &rec, err) == -1) {
			struct xp_event_info	ev = { .kind = XE_REFUSED, .why = why };

			snprintf(why, sizeof(why), "journal line %zu: %s", i + 2, err);
			x->x.refused++;
			say(x, &ev);
			push(x, b);
			continue;
		}
		if (check_rec(x, b, &rec, err) == -1) {
			struct xp_event_info	ev = { .kind = XE_REFUSED, .rec = &rec,
				    .why = why };

			snprintf(why, sizeof(why), "journal line %zu: %s", i + 2, err);
			x->x.refused++;
			say(x, &ev);
			push(x, b);	/* its execution runs again */
			xp_rec_clear(&rec);
			continue;
		}
		take(x, b, &rec);
		node_release(b);
		xp_rec_clear(&rec);
		taken++;
	}
	x->replaying = false;
	return taken;
}

/* ---- executors ---- */

char *
explore_lease(const char *proxy, const char *plan_text, const struct xnode *b)
{
	struct xstep	*pre;
	size_t		 n = explore_prefix(b, &pre);
	json_t		*j = json_pack("{s:s,s:s,s:I,s:o}", "proxy", proxy, "plan",
			    plan_text, "no", (json_int_t)b->no, "steps",
			    xp_steps_json(pre, n));
	char		*text = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	free(pre);
	return text;
}

/* One message of the codec on a pipe, whole. */
static int
pipe_send(int fd, const struct msg *m, char *err)
{
	uint8_t	*buf;
	size_t	 len;
	int	 rc;

	if (msg_encode(m, &buf, &len, err) == -1)
		return -1;
	rc = write_all(fd, buf, len);
	if (rc == -1)
		errf(err, "the pipe: %s", strerror(errno));
	free(buf);
	return rc;
}

/* The next message on a pipe, decoded; -1 when the other end is gone or
 * sent something that is not a message. */
static int
pipe_recv(int fd, struct msg *m, char *err)
{
	uint8_t		 h[MSG_HDR_LEN], *buf;
	uint32_t	 body;
	int		 rc;

	memset(m, 0, sizeof(*m));	/* msg_clear'able whatever happens */
	if (read_all(fd, h, sizeof(h)) == -1)
		return errf(err, "the pipe closed");
	body = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
	if (body > MSG_MAX - MSG_HDR_LEN)
		return errf(err, "a message of %" PRIu32 " bytes", body);
	buf = xcalloc(MSG_HDR_LEN + (size_t)body, 1);
	memcpy(buf, h, sizeof(h));
	rc = read_all(fd, buf + MSG_HDR_LEN, body) == -1 ? errf(err, "the pipe "
	    "closed mid-message") : msg_decode(buf, MSG_HDR_LEN + body, m, err);
	free(buf);
	return rc;
}

/* A local execution of b on w, as its record. */
static void
run_here(struct explore *x, struct wrk *w, const char *plan_text, struct xnode *b,
    struct xrec *r, bool quiet)
{
	struct seed_result	 res = { 0 };
	char			*lease = explore_lease(x->o.proxy, plan_text, b);
	char			 err[ERR_LEN];

	if (quiet)	/* the explorer says a divergence once, itself */
		log_set_warnings(0);
	wrk_explore(w, x->o.seed, lease, &res);
	if (quiet)
		log_set_warnings(1);
	if (xp_rec_parse(json_object_get(res.detail, "explore"), r, err) == -1) {
		memset(r, 0, sizeof(*r));
		r->verdict = VERDICT_INFRA;
		r->reason = res.reason != REASON_NONE && res.verdict == VERDICT_INFRA ?
		    res.reason : REASON_WORKER_LOST;
		snprintf(r->message, sizeof(r->message), "%s", res.message);
		snprintf(r->why_no_steps, sizeof(r->why_no_steps), "%s", err);
	}
	seed_result_clear(&res);
	free(lease);
}

static const char *
stop_now(const struct explore *x, const struct explore_budget *bg, uint64_t sent)
{
	if (*bg->stop)
		return *bg->stop == SIGINT ? "Ctrl-C" : "SIGTERM";
	if (x->nst > 0 && bg->first_failure && x->x.failing > 0)
		return "a failing schedule";
	if (x->nst > 0 && ((bg->executions > 0 && sent >= bg->executions) ||
	    (bg->ms > 0 && now_ms() - bg->t0 >= bg->ms)))
		return "the budget";
	return NULL;
}

/*
 * An executor: a worker of its own (schema, workspace, services) taking
 * LEASE messages on rfd and answering each with a RESULT on wfd, as a
 * `soak worker` answers an explore lease, until its pipe closes.
 */
static void
executor_main(struct wrk *w, bool quiet, int rfd, int wfd)
{
	struct msg	 req, rep;
	char		 err[ERR_LEN];
	int		 ready;

	ready = wrk_open(w, err) == 0;
	memset(&rep, 0, sizeof(rep));
	rep.type = ready ? MSG_ACK : MSG_NACK;
	rep.u.ack.ok = (uint8_t)ready;
	rep.u.ack.text = ready ? "ready" : err;
	if (pipe_send(wfd, &rep, err) == -1 || !ready) {
		wrk_close(w, true);
		return;
	}
	while (pipe_recv(rfd, &req, err) == 0) {
		struct seed_result	 res = { 0 };
		char			*detail;
		int			 rc;

		if (req.type != MSG_LEASE || req.u.lease.nseeds != 1) {
			msg_clear(&req);
			break;
		}
		if (quiet)
			log_set_warnings(0);
		wrk_explore(w, req.u.lease.seeds[0].seed, req.u.lease.explore, &res);
		if (quiet)
			log_set_warnings(1);
		detail = wrk_result_text(&res);
		memset(&rep, 0, sizeof(rep));
		rep.type = MSG_RESULT;
		rep.u.result.worker_id = (uint32_t)w->id;
		rep.u.result.lease_id = req.u.lease.lease_id;
		rep.u.result.seed = req.u.lease.seeds[0].seed;
		rep.u.result.attempt = req.u.lease.seeds[0].attempt;
		rep.u.result.plan = "";
		rep.u.result.plan_hash = "";
		rep.u.result.verdict = (uint8_t)res.verdict;
		rep.u.result.reason = UNCONST(reason_name(res.reason));
		rep.u.result.duration_ms = res.duration_ms < 0 ? 0 :
		    (uint32_t)res.duration_ms;
		rep.u.result.detail = detail;
		rc = pipe_send(wfd, &rep, err);
		free(detail);
		seed_result_clear(&res);
		msg_clear(&req);
		if (rc == -1)
			break;
	}
	wrk_close(w, true);
}

struct ex {
	pid_t		 pid;
	int		 to, from;	/* request and result pipes */
	bool		 busy, ok;
	struct xnode	*node;
};

/* nexec executors forked; how many said they are ready. */
static int
executors_start(struct ex *ex, int nexec, struct wrk *w, bool quiet)
{
	struct msg	 m;
	char		 err[ERR_LEN], esc[LOG_ESC_LEN];
	int		 k, alive = 0, a[2], b[2];

	fflush(stdout);
	fflush(stderr);
	for (k = 0; k < nexec; k++) {
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
			executor_main(w, quiet, a[0], b[1]);
			rm_rf(w->workspace);
			fflush(stdout);
			_exit(0);
		}
		close(a[0]);
		close(b[1]);
		ex[k].to = a[1];
		ex[k].from = b[0];
	}
	for (k = 0; k < nexec; k++) {
		if (ex[k].from == -1)
			continue;
		if (pipe_recv(ex[k].from, &m, err) == 0 && m.type == MSG_ACK &&
		    m.u.ack.ok) {
			ex[k].ok = true;
			alive++;
		} else
			log_warnx("executor %d could not start: %s", k + 1,
			    log_escape(esc, sizeof(esc), m.type == MSG_NACK ?
			    m.u.ack.text : err));
		msg_clear(&m);
	}
	return alive;
}

/* Executor k's answer: its record taken, or its branch back. */
static void
executor_answer(struct explore *x, struct ex *e, int k, int *alive)
{
	struct msg	 m;
	struct xrec	 rec;
	json_t		*d;
	char		 err[ERR_LEN];

	e->busy = false;
	if (pipe_recv(e->from, &m, err) == -1 || m.type != MSG_RESULT) {
		log_warnx("executor %d died running a prefix of %u steps: the prefix "
		    "goes back", k + 1, e->node->n);
		push(x, e->node);
		e->ok = false;
		(*alive)--;
		msg_clear(&m);
		return;
	}
	d = json_loads(m.u.result.detail, 0, NULL);
	msg_clear(&m);
	if (xp_rec_parse(json_object_get(d, "explore"), &rec, err) == -1)
		explore_refuse(x, e->node, NULL, err);
	else {
		(void)explore_take(x, e->node, &rec, err);
		xp_rec_clear(&rec);
	}
	json_decref(d);
}

static const char *
run_executors(struct explore *x, struct wrk *w, const char *plan_text, int nexec,
    const struct explore_budget *bg, bool quiet)
{
	struct ex	*ex = xcalloc((size_t)nexec, sizeof(*ex));
	struct pollfd	*pf = xcalloc((size_t)nexec, sizeof(*pf));
	const char	*stopped = NULL;
	uint64_t	 sent = 0;
	int		 k, busy = 0, alive;
	char		 err[ERR_LEN];

	alive = executors_start(ex, nexec, w, quiet);
	printf("  %d executor%s at work\n", alive, alive == 1 ? "" : "s");
	fflush(stdout);
	while (alive > 0 && (busy > 0 || (x->nst > 0 && stopped == NULL))) {
		for (k = 0; k < nexec && stopped == NULL; k++) {
			struct msg	 m = { .type = MSG_LEASE };
			struct msg_seed	 one;

			if (!ex[k].ok || ex[k].busy || x->nst == 0)
				continue;
			if ((stopped = stop_now(x, bg, sent)) != NULL)
				break;
			ex[k].node = explore_next(x);
			one.seed = x->o.seed;
			one.attempt = (uint32_t)(ex[k].node->no > UINT32_MAX ? UINT32_MAX :
			    ex[k].node->no);
			m.u.lease.lease_id = ex[k].node->no;
			m.u.lease.plan = "";
			m.u.lease.plan_hash = "";
			m.u.lease.explore = explore_lease(x->o.proxy, plan_text, ex[k].node);
			m.u.lease.nseeds = 1;
			m.u.lease.seeds = &one;
			if (pipe_send(ex[k].to, &m, err) == -1) {
				push(x, ex[k].node);
				ex[k].ok = false;
				alive--;
			} else {
				ex[k].busy = true;
				busy++;
				sent++;
			}
			free(m.u.lease.explore);
		}
		if (busy == 0)
			break;
		for (k = 0; k < nexec; k++) {
			pf[k].fd = ex[k].busy ? ex[k].from : -1;
			pf[k].events = POLLIN;
			pf[k].revents = 0;
		}
		if (poll(pf, (nfds_t)nexec, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (k = 0; k < nexec; k++) {
			if (!ex[k].busy || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			busy--;
			if (*bg->stop) {
				/* the signal reached its turns too: this one says nothing */
				struct msg	m;

				ex[k].busy = false;
				if (pipe_recv(ex[k].from, &m, err) == 0)
					msg_clear(&m);
				push(x, ex[k].node);
				continue;
			}
			executor_answer(x, &ex[k], k, &alive);
		}
		if (*bg->stop && stopped == NULL)
			stopped = *bg->stop == SIGINT ? "Ctrl-C" : "SIGTERM";
	}
	if (alive == 0 && x->nst > 0 && stopped == NULL)
		stopped = "no executor left";
	for (k = 0; k < nexec; k++) {
		if (ex[k].to != -1)
			close(ex[k].to);	/* its end of input: it closes its worker */
		if (ex[k].from != -1)
			close(ex[k].from);
	}
	for (k = 0; k < nexec; k++) {
		int	status;

		if (ex[k].pid > 0)
			while (waitpid(ex[k].pid, &status, 0) == -1 && errno == EINTR)
				;
	}
	free(ex);
	free(pf);
	return stopped;
}

const char *
explore_run(struct explore *x, struct wrk *w, const struct plan *base, int nexec,
    const struct explore_budget *bg, bool quiet)
{
	char		*plan_text = plan_dump(base);
	const char	*stopped = NULL;
	uint64_t	 sent = 0;
	char		 err[ERR_LEN];

	if (nexec > 1) {
		stopped = run_executors(x, w, plan_text, nexec, bg, quiet);
		free(plan_text);
		return stopped;
	}
	while (x->nst > 0) {
		struct xnode	*b;
		struct xrec	 rec;

		if ((stopped = stop_now(x, bg, sent)) != NULL)
			break;
		b = explore_next(x);
		run_here(x, w, plan_text, b, &rec, quiet);
		sent++;
		if (*bg->stop) {
			/* the signal reached the turns too: this one says nothing */
			xp_rec_clear(&rec);
			stopped = *bg->stop == SIGINT ? "Ctrl-C" : "SIGTERM";
			push(x, b);
			break;
		}
		(void)explore_take(x, b, &rec, err);
		xp_rec_clear(&rec);
	}
	free(plan_text);
	return stopped;
}
