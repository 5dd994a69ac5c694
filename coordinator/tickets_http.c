/*
 * HTTP for the ticket sinks: one JSON request, bounded in time and size,
 * retried on what a tracker means as "later" (429, 5xx, a dropped
 * connection).  Secrets travel only in headers set here and are never put
 * into a message: errors name the sink, the method, the URL and the status.
 */
#include "coordinator/tickets_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/log.h"
#include "common/soak.h"
#include "common/util.h"

#define TK_RESP_CAP		(4u << 20)	/* a tracker's reply, at most */
#define TK_BACKOFF_FIRST_MS	200L
#define TK_BACKOFF_CAP_MS	5000L
#define TK_RETRY_AFTER_CAP_S	30L
#define TK_CONNECT_TIMEOUT_MS	10000L

struct resp_buf {
	char	*data;
	size_t	 len;
	size_t	 size;
	bool	 overflow;
};

static size_t
resp_write(char *p, size_t size, size_t n, void *arg)
{
	struct resp_buf	*b = arg;
	size_t		 len = size * n;

	if (b->len + len + 1 > TK_RESP_CAP) {
		b->overflow = true;
		return 0;	/* makes curl fail with CURLE_WRITE_ERROR */
	}
	if (b->len + len + 1 > b->size) {
		size_t	 ns = b->size ? b->size : 4096;
		char	*nd;

		while (ns < b->len + len + 1)
			ns *= 2;
		if ((nd = realloc(b->data, ns)) == NULL)
			return 0;
		b->data = nd;
		b->size = ns;
	}
	memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return len;
}

long
tk_http_backoff_ms(int attempt, long retry_after_s)
{
	long	ms = TK_BACKOFF_FIRST_MS;
	int	i;

	if (retry_after_s > 0)
		return (retry_after_s > TK_RETRY_AFTER_CAP_S ?
		    TK_RETRY_AFTER_CAP_S : retry_after_s) * 1000L;
	for (i = 1; i < attempt && ms < TK_BACKOFF_CAP_MS; i++)
		ms *= 2;
	return ms > TK_BACKOFF_CAP_MS ? TK_BACKOFF_CAP_MS : ms;
}

static void
pause_ms(long ms)
{
	struct timespec	ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * A short reason from the tracker's error reply (GitHub/GitLab "message",
 * Jira "errorMessages"), never raw bytes: a reply could echo a header.
 */
static void
reply_reason(const char *body, char *buf, size_t size)
{
	json_t		*j;
	const char	*m = NULL;
	char		 esc[96];

	buf[0] = '\0';
	if (body == NULL || (j = json_loads(body, 0, NULL)) == NULL)
		return;
	m = json_string_value(json_object_get(j, "message"));
	if (m == NULL)
		m = json_string_value(json_object_get(j, "error"));
	if (m == NULL)
		m = json_string_value(json_array_get(json_object_get(j,
		    "errorMessages"), 0));
	/* the tracker's words reach a terminal and a log: escaped (log.h),
	 * cut between characters */
	if (m != NULL)
		snprintf(buf, size, ": \"%s\"", log_escape(esc, sizeof(esc), m));
	json_decref(j);
}

int
tk_http_do(const struct tk_http *req, long *status, char **resp, char *err)
{
	struct curl_slist	*hdrs = NULL;
	struct resp_buf		 b;
	CURL			*c = NULL;
	CURLcode		 cc = CURLE_OK;
	char			 cerr[CURL_ERROR_SIZE], why[128], *ua;
	long			 code = 0, wait;
	curl_off_t		 retry_after = 0;
	size_t			 i;
	int			 attempt, rc = -1;
	bool			 creds;

	*resp = NULL;
	*status = 0;
	memset(&b, 0, sizeof(b));
	creds = req->auth_header != NULL || req->userpwd != NULL;
	if (creds && !req->insecure_http &&
	    strncasecmp(req->url, "https://", 8) != 0)
		return errf(err, "%s: %s %s: refused: not https://, the token "
		    "would travel in clear text (use https://, or set "
		    "tickets.insecure_http: true)", req->sink, req->method,
		    req->url);
	if ((c = curl_easy_init()) == NULL)
		return errf(err, "%s: %s %s: cannot initialise libcurl",
		    req->sink, req->method, req->url);
	ua = xasprintf("User-Agent: soak/%s", SOAK_VERSION);
	hdrs = curl_slist_append(hdrs, ua);
	free(ua);
	if (req->body != NULL)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	for (i = 0; req->headers != NULL && req->headers[i] != NULL; i++)
		hdrs = curl_slist_append(hdrs, req->headers[i]);
	if (req->auth_header != NULL)
		hdrs = curl_slist_append(hdrs, req->auth_header);

	for (attempt = 1; attempt <= TK_HTTP_ATTEMPTS; attempt++) {
		free(b.data);
		memset(&b, 0, sizeof(b));
		curl_easy_reset(c);
		curl_easy_setopt(c, CURLOPT_URL, req->url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, TK_HTTP_TIMEOUT_MS);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
		    TK_CONNECT_TIMEOUT_MS);
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR,
		    creds && !req->insecure_http ? "https" : "http,https");
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, resp_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		if (req->userpwd != NULL) {
			curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
			curl_easy_setopt(c, CURLOPT_USERPWD, req->userpwd);
		}
		if (strcmp(req->method, "POST") == 0) {
			curl_easy_setopt(c, CURLOPT_POST, 1L);
			curl_easy_setopt(c, CURLOPT_POSTFIELDS,
			    req->body ? req->body : "");
		} else if (strcmp(req->method, "GET") != 0)
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
		cerr[0] = '\0';
		code = 0;
		retry_after = 0;
		cc = curl_easy_perform(c);
		if (cc == CURLE_OK) {
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
			curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &retry_after);
			if (code >= 200 && code < 300) {
				*status = code;
				*resp = b.data ? b.data : xstrdup("");
				b.data = NULL;
				rc = 0;
				goto out;
			}
			if (code != 429 && code < 500)
				break;	/* the tracker said no; asking again won't help */
		} else if (b.overflow)
			break;
		if (attempt == TK_HTTP_ATTEMPTS)
			break;
		wait = tk_http_backoff_ms(attempt, (long)retry_after);
		if (cc == CURLE_OK)
			log_info("tickets: %s: %s %s: HTTP %ld, retry %d of %d "
			    "in %ld ms", req->sink, req->method, req->url, code,
			    attempt, TK_HTTP_ATTEMPTS - 1, wait);
		else
			log_info("tickets: %s: %s %s: %s, retry %d of %d in %ld "
			    "ms", req->sink, req->method, req->url,
			    curl_easy_strerror(cc), attempt, TK_HTTP_ATTEMPTS - 1,
			    wait);
		pause_ms(wait);
	}
	*status = code;
	if (cc != CURLE_OK)
		errf(err, "%s: %s %s: %s after %d attempt(s)", req->sink,
		    req->method, req->url, b.overflow ? "reply larger than 4 MiB" :
		    curl_easy_strerror(cc), attempt > TK_HTTP_ATTEMPTS ?
		    TK_HTTP_ATTEMPTS : attempt);
	else {
		reply_reason(b.data, why, sizeof(why));
		errf(err, "%s: %s %s: HTTP %ld%s after %d attempt(s)", req->sink,
		    req->method, req->url, code, why, attempt > TK_HTTP_ATTEMPTS ?
		    TK_HTTP_ATTEMPTS : attempt);
	}
out:
	free(b.data);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return rc;
}
