/*
 * Config errors: what a worker meets that no retry can mend
 * (docs/results.md "Config errors stop a run early").  A turn command that
 * is not there, an invariant that does not parse, a schema file with a
 * syntax error: every seed on every worker fails the same way, so retrying
 * each seed twice and suggesting a replay only hides the one thing to fix.
 *
 * The worker knows the precise cause -- execve's errno, the SQLSTATE of a
 * failed invariant or DDL -- and names the config key it came from.  It
 * sends it in a RESULT's detail as
 *
 *	"config_error": {"kind": "exec", "what": "turn.command",
 *	    "code": "ENOENT", "detail": "/abs/redeem.sh: No such file or directory"}
 *
 * (an invariant's SQL adds "position", where in the statement the server
 * pointed, which the coordinator turns into the file's line and column)
 *
 * (free-form detail JSON: no protocol change), and the coordinator
 * decides (coordinator/coord.c, the early stop).  Only causes that cannot
 * be transient are config errors:
 *
 *	exec	ENOENT ENOTDIR ENOEXEC ELOOP ENAMETOOLONG E2BIG: plainly the
 *		config (exit 78); EACCES EPERM: maybe this machine's (a noexec
 *		mount), exit 2.  ENOMEM, EAGAIN, ETXTBSY, ...: not one.
 *	sql	class 42 (syntax error or access rule violation: 42601 syntax,
 *		42703 undefined column, 42P01 undefined table, 42883
 *		undefined function, ...): plainly the config, but 42501
 *		(insufficient privilege, the database's grants): exit 2.
 *	load	the worker cannot load the config the coordinator loaded (its
 *		folder is not there, a bundle that does not check): the
 *		worker's machine, exit 2.
 */
#ifndef SOAK_CFGERR_H
#define SOAK_CFGERR_H

#include <stdbool.h>

#include <jansson.h>

#include "common/util.h"

enum cfgerr_kind { CFGERR_NONE, CFGERR_EXEC, CFGERR_SQL, CFGERR_LOAD };

struct cfgerr {
	enum cfgerr_kind	kind;		/* CFGERR_NONE: there is none */
	char			what[64];	/* the config key: "turn.command",
						   "setup", "services[0].command",
						   "invariants[1].sql",
						   "database.schema", "config" */
	char			code[16];	/* "ENOENT", "42703", "" */
	char			detail[ERR_LEN];	/* the sentence, without the key */
	long			position;	/* sql: the 1-based character of the
						   statement the server pointed at,
						   0 when none ("position") */
};

/*
 * Each fills *e and returns true when the cause cannot be transient; else
 * leaves *e as it was and returns false.  detail is the sentence to show
 * after the key ("…/redeem.sh: No such file or directory").
 */
bool	cfgerr_exec(struct cfgerr *e, const char *what, int errnum,
	    const char *detail);
bool	cfgerr_sql(struct cfgerr *e, const char *what, const char *sqlstate,
	    const char *detail);
void	cfgerr_load(struct cfgerr *e, const char *detail);

/* Whether it is plainly the config (exit 78), not maybe the machine's (2). */
bool	cfgerr_plain(const struct cfgerr *e);
/* The same cause: kind, key and code (the detail may name other paths). */
bool	cfgerr_same(const struct cfgerr *a, const struct cfgerr *b);

/* {"kind", "what", "code", "detail"[, "position"]} (new reference); NULL for none. */
json_t	*cfgerr_json(const struct cfgerr *e);
/*
 * detail's "config_error" into *e: 0, or -1 (*e of kind CFGERR_NONE) when
 * there is none or it does not read as one.
 */
int	cfgerr_from_detail(const json_t *detail, struct cfgerr *e);

#endif
