#include "coordinator/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

static const char *const jev_names[] = {
	[JEV_RUN] = "run", [JEV_RESUME] = "resume", [JEV_WORKER] = "worker",
	[JEV_LEASE] = "lease", [JEV_RESULT] = "result",
	[JEV_LEASE_END] = "lease_end", [JEV_OTHER] = "other",
};

const char *
jev_name(enum jev ev)
{
	return (unsigned)ev < nitems(jev_names) ? jev_names[ev] : "other";
}

enum jev
jev_parse(const char *name)
{
	size_t	i;

	for (i = 0; i < JEV_OTHER; i++)
		if (strcmp(name, jev_names[i]) == 0)
			return (enum jev)i;
	return JEV_OTHER;
}

struct journal {
	int	 fd;
	char	*path;
	int	 pending;	/* lines written, not yet fsync'd */
	int64_t	 first_pending;	/* when the oldest of them was written */
	off_t	 end;		/* bytes of whole lines written */
	bool	 failed;	/* a write failed: nothing more is written */
	char	 why[ERR_LEN];
};

static void
j_sync(struct journal *j)
{
	if (j->pending == 0)
		return;
	if (fsync(j->fd) == -1 && !j->failed) {
		j->failed = true;
		errf(j->why, "cannot fsync %s: %s", j->path, strerror(errno));
	}
	j->pending = 0;
}

/*
 * A line that cannot be written whole (ENOSPC, EIO) is cut off again, so
 * the journal ends with its last whole line, and nothing more is written:
 * a later line after a hole would make the journal lie about the order.
 */
static void
j_write(struct journal *j, json_t *line)
{
	char	*text;
	size_t	 len, off = 0;
	ssize_t	 n;

	if (j->failed)
		return;
	if ((text = json_dumps(line, JSON_COMPACT)) == NULL) {
		j->failed = true;
		errf(j->why, "cannot encode a line of %s", j->path);
		return;
	}
	len = strlen(text);
	text[len++] = '\n';	/* json_dumps's NUL: the line's end */
	while (off < len) {
		if ((n = write(j->fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			j->failed = true;
			errf(j->why, "cannot write %s: %s", j->path, strerror(errno));
			if (off > 0 && ftruncate(j->fd, j->end) == -1)
				log_warn("cannot cut the last line of %s off again", j->path);
			break;
		}
		off += (size_t)n;
	}
	free(text);
	if (j->failed)
		return;
	j->end += (off_t)len;
	if (j->pending++ == 0)
		j->first_pending = now_ms();
	if (j->pending >= JOURNAL_SYNC_LINES)
		j_sync(j);
}

static struct journal *
j_new(const char *dir)
{
	struct journal	*j = xcalloc(1, sizeof(*j));

	j->fd = -1;
	j->path = xasprintf("%s/%s", dir, JOURNAL_NAME);
	return j;
}

static void
j_free(struct journal *j)
{
	if (j->fd != -1)
		close(j->fd);
	free(j->path);
	free(j);
}

struct journal *
journal_create(const char *dir, json_t *head, char *err)
{
	struct journal	*j = j_new(dir);

	json_object_set_new(head, "t", json_string(jev_name(JEV_RUN)));
	if ((j->fd = open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
	    0600)) == -1) {
		errf(err, "cannot create %s: %s%s", j->path, strerror(errno),
		    errno == EEXIST ? " (a run was there: --resume it, or use "
		    "another --out)" : "");
		json_decref(head);
		j_free(j);
		return NULL;
	}
	j_write(j, head);
	json_decref(head);
	j_sync(j);
	if (j->failed) {
		errf(err, "%s", j->why);
		unlink(j->path);	/* no head: no run to resume */
		j_free(j);
		return NULL;
	}
	fsync_dir(dir);
	return j;
}

struct journal *
journal_resume(const char *dir, json_t **head,
    int (*fn)(enum jev type, json_t *e, void *arg, char *err), void *arg,
    char *err)
{
	struct journal	*j = j_new(dir);
	FILE		*f = NULL;
	char		*line = NULL, why[ERR_LEN];
	size_t		 cap = 0;
	ssize_t		 n;
	off_t		 good = 0;
	long		 lineno = 0;
	json_t		*e;
	json_error_t	 jerr;

	*head = NULL;
	if ((j->fd = open(j->path, O_RDWR | O_APPEND | O_CLOEXEC)) == -1 ||
	    (f = fdopen(dup(j->fd), "r")) == NULL) {
		errf(err, "cannot open %s: %s%s", j->path, strerror(errno),
		    errno == ENOENT ? " (is it the --out of a soak run?)" : "");
		goto fail;
	}
	while ((n = getline(&line, &cap, f)) != -1) {
		const char	*type;

		lineno++;
		e = line[n - 1] == '\n' ? json_loadb(line, (size_t)n, 0, &jerr) : NULL;
		if (e == NULL || !json_is_object(e) ||
		    (type = json_string_value(json_object_get(e, "t"))) == NULL) {
			/* A line cut short by a death mid-write is the last one. */
			if (getc(f) == EOF && lineno > 1) {
				log_warnx("%s:%ld: a line cut short (the coordinator "
				    "died while writing it): dropped", j->path, lineno);
				json_decref(e);
				if (ftruncate(j->fd, good) == -1) {
					errf(err, "cannot cut %s: %s", j->path, strerror(errno));
					goto fail;
				}
				break;
			}
			errf(err, "%s:%ld: not a journal line%s%s", j->path, lineno,
			    e ? "" : ": ", e ? "" : jerr.text);
			json_decref(e);
			goto fail;
		}
		if (lineno == 1) {
			if (jev_parse(type) != JEV_RUN) {
				json_decref(e);
				errf(err, "%s:1: not the head of a run", j->path);
				goto fail;
			}
			*head = e;
		} else {
			if (fn(jev_parse(type), e, arg, why) == -1) {
				json_decref(e);
				errf(err, "%s:%ld: %s", j->path, lineno, why);
				goto fail;
			}
			json_decref(e);
		}
		good += n;
	}
	if (*head == NULL) {
		errf(err, "%s is empty", j->path);
		goto fail;
	}
	free(line);
	line = NULL;
	fclose(f);
	f = NULL;
	j->end = good;
	e = json_pack("{s:s, s:I}", "t", jev_name(JEV_RESUME), "at_ms",
	    (json_int_t)wall_ms());
	j_write(j, e);
	json_decref(e);
	j_sync(j);
	if (j->failed) {
		errf(err, "%s", j->why);
		goto fail;
	}
	return j;
fail:
	free(line);
	if (f)
		fclose(f);
	json_decref(*head);
	*head = NULL;
	j_free(j);
	return NULL;
}

json_t *
journal_head(const char *dir, char *err)
{
	char		*path = xasprintf("%s/%s", dir, JOURNAL_NAME), *line = NULL;
	size_t		 cap = 0;
	ssize_t		 n;
	FILE		*f;
	json_t		*head = NULL;
	json_error_t	 jerr;

	if ((f = fopen(path, "re")) == NULL)
		errf(err, "cannot open %s: %s%s", path, strerror(errno), errno == ENOENT ?
		    " (--resume wants the --out directory of a soak run)" : "");
	else if ((n = getline(&line, &cap, f)) <= 0 ||
	    (head = json_loadb(line, (size_t)n, 0, &jerr)) == NULL ||
	    !json_is_object(head) ||
	    jev_parse(json_string_value(json_object_get(head, "t")) ?
	    json_string_value(json_object_get(head, "t")) : "") != JEV_RUN) {
		errf(err, "%s:1: not the head of a run's journal", path);
		json_decref(head);
		head = NULL;
	}
	if (f)
		fclose(f);
	free(line);
	free(path);
	return head;
}

void
journal_append(struct journal *j, enum jev type, json_t *e)
{
	if (j == NULL) {
		json_decref(e);
		return;
	}
	json_object_set_new(e, "t", json_string(jev_name(type)));
	/* When, by this machine's clock: report.html's worker timeline.  A
	 * replay reads no time, so journals written before it resume alike. */
	if (json_object_get(e, "at_ms") == NULL)
		json_object_set_new(e, "at_ms", json_integer((json_int_t)wall_ms()));
	j_write(j, e);
	json_decref(e);
}

void
journal_tick(struct journal *j)
{
	if (j != NULL && j->pending > 0 && now_ms() - j->first_pending >= JOURNAL_SYNC_MS)
		j_sync(j);
}

const char *
journal_failed(const struct journal *j)
{
	return j != NULL && j->failed ? j->why : NULL;
}

int
journal_close(struct journal *j, char *err)
{
	int	rc = 0;

	if (j == NULL)
		return 0;
	j_sync(j);
	if (j->failed) {
		errf(err, "%s", j->why);
		rc = -1;
	}
	j_free(j);
	return rc;
}
