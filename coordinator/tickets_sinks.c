/*
 * Ticket sinks: GitHub Issues, GitLab Issues, Jira (REST v2 issues in wiki
 * markup, v3 enhanced JQL search), a JSON
 * webhook, and markdown files.  Each speaks the tracker's documented REST
 * shapes; dedupe is by the label "soak:<hash>" (see tickets.h), looked up
 * among open tickets only, so a closed bug that comes back gets a new one.
 */
#include "coordinator/tickets_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* ---- shared ---- */

static const char *
env_value(const char *name)
{
	const char	*v = name ? getenv(name) : NULL;

	return v != NULL && *v != '\0' ? v : NULL;
}

int
tk_sink_ctx_init(struct tk_sink_ctx *ctx, const struct tk_run *run,
    bool need_token, char *err)
{
	const struct tk_config	*c = &run->cfg;
	const char		*token, *user, *def = NULL;
	char			*base;
	size_t			 n;

	memset(ctx, 0, sizeof(*ctx));
	ctx->run = run;
	ctx->cfg = c;
	if (strcmp(c->sink, "github") == 0)
		def = "https://api.github.com";
	else if (strcmp(c->sink, "gitlab") == 0)
		def = "https://gitlab.com/api/v4";
	if (strcmp(c->sink, "file") != 0) {
		if (c->url == NULL && def == NULL)
			return errf(err, "tickets.url is required for the %s sink",
			    c->sink);
		base = xstrdup(c->url ? c->url : def);
		n = strlen(base);
		while (n > 0 && base[n - 1] == '/')
			base[--n] = '\0';
		ctx->base = base;
	}
	if (strcmp(c->sink, "github") == 0 &&
	    (c->repo == NULL || strchr(c->repo, '/') == NULL))
		return errf(err, "tickets.repo must be \"owner/name\" for the "
		    "github sink");
	if ((strcmp(c->sink, "gitlab") == 0 || strcmp(c->sink, "jira") == 0) &&
	    c->project == NULL)
		return errf(err, "tickets.project is required for the %s sink",
		    c->sink);
	if (!need_token || strcmp(c->sink, "file") == 0)
		return 0;
	if (c->token_env == NULL) {
		if (strcmp(c->sink, "webhook") == 0)
			return 0;
		return errf(err, "tickets.token_env must name the environment "
		    "variable holding the %s token", c->sink);
	}
	if ((token = env_value(c->token_env)) == NULL)
		return errf(err, "the token variable %s (tickets.token_env) is not "
		    "set in the environment", c->token_env);
	ctx->token = xstrdup(token);
	if (strcmp(c->sink, "gitlab") == 0)
		ctx->auth_header = xasprintf("PRIVATE-TOKEN: %s", token);
	else if (strcmp(c->sink, "jira") == 0 && c->user_env != NULL) {
		if ((user = env_value(c->user_env)) == NULL)
			return errf(err, "the user variable %s (tickets.user_env) "
			    "is not set in the environment", c->user_env);
		ctx->userpwd = xasprintf("%s:%s", user, token);
	} else
		ctx->auth_header = xasprintf("Authorization: Bearer %s", token);
	return 0;
}

/* Overwrites secrets before freeing them: a core file should not keep them. */
static void
free_secret(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

void
tk_sink_ctx_clear(struct tk_sink_ctx *ctx)
{
	if (ctx == NULL)
		return;
	free(UNCONST(ctx->base));
	free_secret(ctx->auth_header);
	free_secret(ctx->userpwd);
	free_secret(ctx->token);
	memset(ctx, 0, sizeof(*ctx));
}

/* A tracker that echoes credentials must not get them into our messages. */
static void
redact(char *err, const char *secret)
{
	char	*p;
	size_t	 n;

	if (secret == NULL || (n = strlen(secret)) == 0)
		return;
	while ((p = strstr(err, secret)) != NULL) {
		memset(p, '*', n < 3 ? n : 3);
		memmove(p + (n < 3 ? n : 3), p + n, strlen(p + n) + 1);
	}
}

/*
 * Sends a request with ctx's credentials; parses a JSON reply into *reply.
 * For a write on behalf of ticket t (non-NULL), body NULL means the body
 * could not be built: an error naming the ticket, and nothing is sent.
 */
static int
call(struct tk_sink_ctx *ctx, const struct tk_ticket *t, const char *method,
    const char *url, json_t *body, const char *const *headers, json_t **reply,
    long *status, char *err)
{
	struct tk_http	 req;
	char		*text = NULL, *resp = NULL;
	long		 code = 0;
	int		 rc = -1;

	if (status != NULL)
		*status = 0;
	memset(&req, 0, sizeof(req));
	req.sink = ctx->cfg->sink;
	req.method = method;
	req.url = url;
	req.auth_header = ctx->auth_header;
	req.userpwd = ctx->userpwd;
	req.headers = headers;
	req.insecure_http = ctx->cfg->insecure_http;
	if (t != NULL && body == NULL) {
		/* json_pack refuses a string that is not UTF-8: never POST "". */
		errf(err, "%s: %s %s: the request body for ticket %s could not be "
		    "built (a string in it is not valid UTF-8); nothing sent",
		    req.sink, method, url, t->hash);
		goto out;
	}
	if (body != NULL &&
	    (text = json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII)) == NULL) {
		errf(err, "%s: %s %s: the request body for ticket %s could not be "
		    "serialised; nothing sent", req.sink, method, url,
		    t != NULL ? t->hash : "-");
		goto out;
	}
	req.body = text;
	rc = tk_http_do(&req, &code, &resp, err);
	if (status != NULL)
		*status = code;
	if (rc == -1) {
		redact(err, ctx->token);
		goto out;
	}
	rc = -1;
	if (reply != NULL && (*reply = json_loads(resp, JSON_DECODE_ANY,
	    NULL)) == NULL) {
		errf(err, "%s: %s %s: HTTP %ld but the reply is not JSON",
		    req.sink, method, url, code);
		goto out;
	}
	rc = 0;
out:
	free(text);
	free(resp);
	return rc;
}

static json_t *
labels_json(const struct tk_ticket *t, bool no_spaces)
{
	json_t	*a = json_array();
	size_t	 i;

	for (i = 0; t->labels[i] != NULL; i++) {
		char *l = xstrdup(t->labels[i]), *p;

		/* Jira labels are single words. */
		for (p = l; no_spaces && *p != '\0'; p++)
			if (*p == ' ')
				*p = '-';
		json_array_append_new(a, json_string(l));
		free(l);
	}
	return a;
}

static char *
id_string(const json_t *v)
{
	const char	*s = json_string_value(v);

	if (json_is_integer(v))
		return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
	/* a tracker's key goes into a URL (the comment's) and onto the
	 * terminal: the characters a key has (Jira's "PROJ-12"), or none */
	if (s != NULL && *s != '\0' && strlen(s) <= 64 &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_.-") == strlen(s) && strstr(s, "..") == NULL)
		return xstrdup(s);
	return NULL;
}

/*
 * What every tracker's create and comment share: POST body to url, and
 * for a create the new ticket's reference from the reply's idkey field.
 * body is taken (decref'd here).
 */
static int
post_create(struct tk_sink_ctx *ctx, const struct tk_ticket *t,
    const char *url, json_t *body, const char *const *headers,
    const char *idkey, char **ref, char *err)
{
	json_t	*reply = NULL;
	int	 rc = -1;

	if (call(ctx, t, "POST", url, body, headers, &reply, NULL, err) == -1)
		goto out;
	*ref = id_string(json_object_get(reply, idkey));
	rc = 0;
out:
	json_decref(reply);
	json_decref(body);
	return rc;
}

/* The ticket's comment as {"body": ...}, POSTed to url. */
static int
post_comment(struct tk_sink_ctx *ctx, const struct tk_ticket *t,
    const char *url, const char *const *headers, char *err)
{
	json_t	*body = json_pack("{s:s}", "body", t->comment);
	int	 rc;

	rc = call(ctx, t, "POST", url, body, headers, NULL, NULL, err);
	json_decref(body);
	return rc;
}

/* ---- GitHub Issues (REST, api version 2022-11-28) ---- */

static const char *const github_headers[] = {
	"Accept: application/vnd.github+json",
	"X-GitHub-Api-Version: 2022-11-28",
	NULL
};

/*
 * Lists open issues with the label rather than using /search/issues: the
 * search index lags by minutes, and two runs close together must still
 * find each other's ticket.
 */
static int
github_find(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	json_t	*reply = NULL;
	char	*label = xasprintf("soak:%s", t->hash), *el = pct_encode(label);
	char	*url = xasprintf("%s/repos/%s/issues?state=open&labels=%s"
	    "&per_page=30", ctx->base, ctx->cfg->repo, el);
	size_t	 i;
	int	 rc = -1;

	*ref = NULL;
	if (call(ctx, NULL, "GET", url, NULL, github_headers, &reply, NULL, err) == -1)
		goto out;
	if (!json_is_array(reply)) {
		errf(err, "github: GET %s: the reply is not a list of issues", url);
		goto out;
	}
	for (i = 0; i < json_array_size(reply) && *ref == NULL; i++) {
		const json_t *is = json_array_get(reply, i);

		/* This endpoint returns pull requests too. */
		if (json_object_get(is, "pull_request") == NULL)
			*ref = id_string(json_object_get(is, "number"));
	}
	rc = 0;
out:
	json_decref(reply);
	free(url);
	free(el);
	free(label);
	return rc;
}

static int
github_create(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	char	*url = xasprintf("%s/repos/%s/issues", ctx->base, ctx->cfg->repo);
	int	 rc;

	rc = post_create(ctx, t, url, json_pack("{s:s, s:s, s:o}", "title",
	    t->title, "body", t->body, "labels", labels_json(t, false)),
	    github_headers, "number", ref, err);
	free(url);
	return rc;
}

static int
github_comment(struct tk_sink_ctx *ctx, const struct tk_ticket *t,
    const char *ref, char *err)
{
	char	*url = xasprintf("%s/repos/%s/issues/%s/comments", ctx->base,
	    ctx->cfg->repo, ref);
	int	 rc;

	rc = post_comment(ctx, t, url, github_headers, err);
	free(url);
	return rc;
}

static char *
github_where(struct tk_sink_ctx *ctx, const struct tk_ticket *t)
{
	return xasprintf("POST %s/repos/%s/issues", ctx->base, ctx->cfg->repo);
}

/* ---- GitLab Issues (REST v4) ---- */

static char *
gitlab_project_url(struct tk_sink_ctx *ctx)
{
	char	*ep = pct_encode(ctx->cfg->project), *url;

	/* "group/name" must travel as one path segment: group%2Fname. */
	url = xasprintf("%s/projects/%s", ctx->base, ep);
	free(ep);
	return url;
}

static int
gitlab_find(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	json_t	*reply = NULL;
	char	*label = xasprintf("soak:%s", t->hash), *el = pct_encode(label);
	char	*pu = gitlab_project_url(ctx);
	char	*url = xasprintf("%s/issues?state=opened&labels=%s&per_page=20",
	    pu, el);
	int	 rc = -1;

	*ref = NULL;
	if (call(ctx, NULL, "GET", url, NULL, NULL, &reply, NULL, err) == -1)
		goto out;
	if (!json_is_array(reply)) {
		errf(err, "gitlab: GET %s: the reply is not a list of issues", url);
		goto out;
	}
	if (json_array_size(reply) > 0)
		*ref = id_string(json_object_get(json_array_get(reply, 0), "iid"));
	rc = 0;
out:
	json_decref(reply);
	free(url);
	free(pu);
	free(el);
	free(label);
	return rc;
}

static int
gitlab_create(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	char	*pu = gitlab_project_url(ctx), *url = xasprintf("%s/issues", pu);
	char	*labels = NULL;
	size_t	 i, len;
	FILE	*f;
	int	 rc;

	/* GitLab takes labels as one comma-separated string. */
	if ((f = open_memstream(&labels, &len)) == NULL)
		abort();
	for (i = 0; t->labels[i] != NULL; i++)
		fprintf(f, "%s%s", i ? "," : "", t->labels[i]);
	fclose(f);
	rc = post_create(ctx, t, url, json_pack("{s:s, s:s, s:s}", "title",
	    t->title, "description", t->body, "labels", labels), NULL, "iid",
	    ref, err);
	free(labels);
	free(url);
	free(pu);
	return rc;
}

static int
gitlab_comment(struct tk_sink_ctx *ctx, const struct tk_ticket *t,
    const char *ref, char *err)
{
	char	*pu = gitlab_project_url(ctx);
	char	*url = xasprintf("%s/issues/%s/notes", pu, ref);
	int	 rc;

	rc = post_comment(ctx, t, url, NULL, err);
	free(url);
	free(pu);
	return rc;
}

static char *
gitlab_where(struct tk_sink_ctx *ctx, const struct tk_ticket *t)
{
	char	*pu = gitlab_project_url(ctx), *w = xasprintf("POST %s/issues", pu);

	free(pu);
	return w;
}

/* ---- Jira (REST v2) ---- */

static const char *const jira_headers[] = {
	"Accept: application/json",
	NULL
};

/*
 * Dedupe by label through the enhanced JQL search, POST
 * /rest/api/3/search/jql {jql, maxResults, fields} -> {issues: [{id, key,
 * fields}], nextPageToken?, isLast}: Jira Cloud answers the old
 * /rest/api/2/search with 410 Gone (CHANGE-2046).  Jira Data Center has
 * no such endpoint (404) and keeps /rest/api/2/search, so a 404 there, and
 * only a 404, falls back to it.  One page of one issue is all we need: the
 * oldest open ticket with the label.
 */
static int
jira_find(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	json_t		*reply = NULL, *body, *issues, *first;
	char		*jql = xasprintf("project = \"%s\" AND labels = \"soak:%s\" "
	    "AND statusCategory != Done ORDER BY created ASC", ctx->cfg->project,
	    t->hash);
	char		*url = xasprintf("%s/rest/api/3/search/jql", ctx->base);
	char		 err3[ERR_LEN];
	long		 status = 0;
	int		 rc = -1;

	*ref = NULL;
	body = json_pack("{s:s, s:i, s:[s]}", "jql", jql, "maxResults", 1,
	    "fields", "summary");
	if (call(ctx, t, "POST", url, body, jira_headers, &reply, &status,
	    err3) == -1) {
		if (status != 404) {
			snprintf(err, ERR_LEN, "%s", err3);
			goto out;
		}
		free(url);
		url = xasprintf("%s/rest/api/2/search", ctx->base);
		log_info("tickets: jira: %s; Jira Data Center: searching %s",
		    err3, url);
		if (call(ctx, t, "POST", url, body, jira_headers, &reply, NULL,
		    err) == -1)
			goto out;
	}
	if (!json_is_array(issues = json_object_get(reply, "issues"))) {
		errf(err, "jira: POST %s: the reply has no issues[]", url);
		goto out;
	}
	if ((first = json_array_get(issues, 0)) != NULL) {
		/* The key when the reply has one; the numeric id works too. */
		if ((*ref = id_string(json_object_get(first, "key"))) == NULL &&
		    (*ref = id_string(json_object_get(first, "id"))) == NULL) {
			errf(err, "jira: POST %s: issues[0] has neither key nor id",
			    url);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(reply);
	json_decref(body);
	free(url);
	free(jql);
	return rc;
}

static int
jira_create(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	char	*url = xasprintf("%s/rest/api/2/issue", ctx->base);
	/*
	 * Jira refuses a summary over 255 characters: cut it to 255 bytes,
	 * which is never more characters, on a character boundary.
	 */
	char	*summary = tk_plain(t->title, TK_JIRA_SUMMARY_MAX - strlen("…"));
	int	 rc;

	rc = post_create(ctx, t, url, json_pack("{s:{s:{s:s}, s:s, s:s, s:{s:s}, "
	    "s:o}}", "fields", "project", "key", ctx->cfg->project, "summary",
	    summary, "description", t->body, "issuetype", "name",
	    ctx->cfg->issue_type, "labels", labels_json(t, true)), jira_headers,
	    "key", ref, err);
	free(summary);
	free(url);
	return rc;
}

static int
jira_comment(struct tk_sink_ctx *ctx, const struct tk_ticket *t,
    const char *ref, char *err)
{
	char	*eref = pct_encode(ref);
	char	*url = xasprintf("%s/rest/api/2/issue/%s/comment", ctx->base, eref);
	int	 rc;

	rc = post_comment(ctx, t, url, jira_headers, err);
	free(url);
	free(eref);
	return rc;
}

static char *
jira_where(struct tk_sink_ctx *ctx, const struct tk_ticket *t)
{
	return xasprintf("POST %s/rest/api/2/issue (project %s, type %s)",
	    ctx->base, ctx->cfg->project, ctx->cfg->issue_type);
}

/* ---- JSON webhook: one POST per ticket; the receiver dedupes ---- */

static int
webhook_create(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	const struct tk_run	*run = ctx->run;
	json_t			*seeds = json_array(), *body;
	size_t			 i;
	int			 rc;

	for (i = 0; i < t->nseeds; i++)
		json_array_append_new(seeds, json_integer((json_int_t)t->seeds[i]));
	body = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:o, s:s, "
	    "s:{s:s, s:s?}, s:s?, s:s?, s:s?}",
	    "fingerprint", t->fingerprint, "fingerprint_hash", t->hash,
	    "kind", t->infra ? "infra" : "bug", "title", t->title,
	    "body", t->body, "comment", t->comment, "seeds", seeds,
	    "smallest_seed", (json_int_t)t->seeds[0],
	    "labels", labels_json(t, false), "run_id", run->run_id,
	    "config", "name", run->config_name, "hash", run->config_hash,
	    "soak_version", run->soak_version, "sut_revision", run->sut_revision,
	    "host", run->host);
	rc = call(ctx, t, "POST", ctx->base, body, NULL, NULL, NULL, err);
	json_decref(body);
	*ref = NULL;
	return rc;
}

static char *
webhook_where(struct tk_sink_ctx *ctx, const struct tk_ticket *t)
{
	return xasprintf("POST %s", ctx->base);
}

/*
 * ---- file: RUN_DIR/tickets/<hash>.md, or the folder tickets.url names ----
 *
 * A relative tickets.url is the config's, so it is resolved against the
 * config's folder (report.json's config.path), like every other path of
 * the config: each run then files into the same folder and dedupes there.
 * Resolved against the run folder, each run would have its own, and dedupe
 * nothing.  A report without config.path falls back to the run folder.
 */
static char *
file_dir(struct tk_sink_ctx *ctx)
{
	const char	*u = ctx->cfg->url, *cp = ctx->run->config_path;
	char		*dir, *p;

	if (u == NULL)
		return path_join(ctx->run->run_dir, "tickets");
	if (strncmp(u, "file://", 7) == 0)
		u += 7;
	if (u[0] == '/' || cp == NULL)
		return path_join(ctx->run->run_dir, u);
	dir = xstrdup(cp);
	if ((p = strrchr(dir, '/')) != NULL)
		*(p == dir ? p + 1 : p) = '\0';
	p = path_join(dir, u);
	free(dir);
	return p;
}

static char *
file_path(struct tk_sink_ctx *ctx, const struct tk_ticket *t)
{
	char	*dir = file_dir(ctx), *p = xasprintf("%s/%s.md", dir, t->hash);

	free(dir);
	return p;
}

static int
file_find(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	struct stat	 st;
	char		*p = file_path(ctx, t);

	*ref = NULL;
	if (stat(p, &st) == 0)
		*ref = p;
	else
		free(p);
	return 0;
}

/* Replaces path with text in one rename, so a reader never sees half. */
static int
file_replace(const char *path, const char *text, char *err)
{
	char	tmp[ERR_LEN];

	if (write_file_atomic(path, text, strlen(text), 0644, err) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s", err);
	return errf(err, "file: %s", tmp);
}

/* "# title" and the body; the title is markdown here, so made inert. */
static char *
file_text(const struct tk_ticket *t)
{
	char	*text = NULL;
	size_t	 len;
	FILE	*f;

	if ((f = open_memstream(&text, &len)) == NULL)
		abort();
	fputs("# ", f);
	tk_put_text(f, TK_MD, t->title, 2 * TK_TITLE_MAX);
	fprintf(f, "\n\n%s", t->body);
	fclose(f);
	return text;
}

static int
file_create(struct tk_sink_ctx *ctx, const struct tk_ticket *t, char **ref,
    char *err)
{
	char	*dir = file_dir(ctx), *p = NULL, *text = NULL;
	int	 rc = -1;

	if (mkdir_p(dir, 0755, err) == -1)
		goto out;
	p = file_path(ctx, t);
	text = file_text(t);
	if (file_replace(p, text, err) == -1)
		goto out;
	*ref = p;
	p = NULL;
	rc = 0;
out:
	free(text);
	free(p);
	free(dir);
	return rc;
}

/*
 * The file stands for an open ticket; a comment is a section appended to
 * it.  Each run is recorded once: filing the same run again leaves the file
 * as it is (returns 1), so running `soak tickets` twice never duplicates
 * anything.
 */
static int
file_comment(struct tk_sink_ctx *ctx, const struct tk_ticket *t,
    const char *ref, char *err)
{
	char	*old = NULL, *mark = NULL, *text = NULL, *id;
	int	 rc = -1;

	if ((old = read_file(ref, 64u << 20, NULL, err)) == NULL)
		goto out;
	id = tk_marker_id(ctx->run->run_id);	/* as put_markers writes it */
	mark = xasprintf("<!-- soak-run: %s -->", id);
	free(id);
	if (strstr(old, mark) != NULL) {
		rc = 1;
		goto out;
	}
	text = xasprintf("%s%s\n---\n\n## Comment\n\n%s", old,
	    old[0] != '\0' && old[strlen(old) - 1] == '\n' ? "" : "\n",
	    t->comment);
	rc = file_replace(ref, text, err);
out:
	free(text);
	free(mark);
	free(old);
	return rc;
}

static char *
file_where(struct tk_sink_ctx *ctx, const struct tk_ticket *t)
{
	return file_path(ctx, t);
}

static const struct tk_sink sinks[] = {
	{ "file", file_find, file_create, file_comment, file_where },
	{ "github", github_find, github_create, github_comment, github_where },
	{ "gitlab", gitlab_find, gitlab_create, gitlab_comment, gitlab_where },
	{ "jira", jira_find, jira_create, jira_comment, jira_where },
	{ "webhook", NULL, webhook_create, NULL, webhook_where },
};

const struct tk_sink *
tk_sink_lookup(const char *name)
{
	size_t	i;

	for (i = 0; name != NULL && i < nitems(sinks); i++)
		if (strcmp(sinks[i].name, name) == 0)
			return &sinks[i];
	return NULL;
}
