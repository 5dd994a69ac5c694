#!/usr/bin/env python3
"""Fake issue tracker for soak's ticket tests (stdlib only, loopback only).

Implements the documented request/response shapes of the calls soak makes:

  github   GET  /repos/{o}/{r}/issues?state=open&labels=L&per_page=N -> [issue]
                (state open, the default, closed or all; every label; at
                most per_page, 1..100, default 30; the repository's only)
           POST /repos/{o}/{r}/issues {title, body, labels}   -> 201 issue
           POST /repos/{o}/{r}/issues/{n}/comments {body}     -> 201 comment
           auth: "Authorization: Bearer TOKEN"
  gitlab   GET  /api/v4/projects/{id}/issues?state=opened&labels=L&per_page=N -> [issue]
                (state opened or closed, every state when absent as GitLab
                does; every label; at most per_page, 1..100, default 20)
           POST /api/v4/projects/{id}/issues {title, description, labels:"a,b"}
           POST /api/v4/projects/{id}/issues/{iid}/notes {body}
           auth: "PRIVATE-TOKEN: TOKEN"
  jira     POST /rest/api/3/search/jql {jql, maxResults?, fields?, nextPageToken?}
           GET  /rest/api/3/search/jql?jql=..&maxResults=..&fields=a,b
                -> {issues:[{id, key, self, fields}], isLast, nextPageToken?}
                (Jira Cloud's enhanced search; an unknown request field, a
                missing jql or a maxResults outside 0..5000 is 400; the jql's
                project, labels and statusCategory != Done clauses honoured)
           GET|POST /rest/api/{2,3}/search -> 410 Gone, as Jira Cloud answers
                since CHANGE-2046 (--jira-dc: /rest/api/2/search works and
                /rest/api/3/search/jql is 404, as on Jira Data Center)
           POST /rest/api/2/issue {fields:{project:{key}, summary, description,
                issuetype:{name}, labels}}                    -> 201 {id, key, self}
                (summary: a string of at most 255 characters, one line;
                description: a string (wiki markup); labels without spaces;
                else 400 {errorMessages, errors})
           POST /rest/api/2/issue/{key}/comment {body}        -> 201
           auth: Basic base64(user:TOKEN)

Every tracker answers a POST whose body is not a JSON object in UTF-8
(an empty body included) with 400, as they do ("Problems parsing JSON").
  webhook  POST /hook  (any JSON object)                      -> 200

Prints "PORT" on stdout once listening.  After every request it rewrites
--record FILE with {"requests": [...], "issues": [...], "comments": [...]}.
Each recorded request keeps method, path, query, the JSON body and whether
the credentials matched --token (never the credentials themselves).

--fail STATUS:COUNT[:RETRY_AFTER] answers the first COUNT write requests
(POST) with STATUS (and Retry-After when given); COUNT -1 means forever.
"""
import argparse, base64, json, os, re, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs, unquote

ap = argparse.ArgumentParser()
ap.add_argument("--kind", required=True, choices=["github", "gitlab", "jira", "webhook"])
ap.add_argument("--record", required=True)
ap.add_argument("--token", default="")
ap.add_argument("--user", default="")
ap.add_argument("--fail", default="")
ap.add_argument("--jira-dc", action="store_true",
                help="behave as Jira Data Center: no /rest/api/3/search/jql")
ap.add_argument("--preload", default="",
                help="a JSON file of issues the tracker holds before the first "
                     "request (as --record writes them: github {number, title, "
                     "body, labels, state: open|closed}, gitlab {iid, project, "
                     "title, description, labels, state: opened|closed}, jira "
                     "{key, id, fields: {project: {key}, summary, labels, "
                     "status: {statusCategory: {key: new|done}}}})")
ap.add_argument("--fail-message", default=None,
                help="a --fail reply's message, as it is (a hostile tracker's "
                     "terminal escapes)")
ap.add_argument("--echo", action="store_true",
                help="a --fail reply quotes the request's credentials back, "
                     "as a careless proxy might")
args = ap.parse_args()

lock = threading.Lock()
state = {"requests": [], "issues": [], "comments": []}
if args.preload:
    with open(args.preload) as f:
        state["issues"] = json.load(f)
fail = None
if args.fail:
    parts = args.fail.split(":")
    fail = {"status": int(parts[0]), "left": int(parts[1]),
            "retry_after": parts[2] if len(parts) > 2 else None}


def save():
    tmp = args.record + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, args.record)


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def auth_ok(self):
        h = self.headers
        if args.kind == "github":
            return h.get("Authorization") == "Bearer " + args.token
        if args.kind == "gitlab":
            return h.get("PRIVATE-TOKEN") == args.token
        if args.kind == "jira":
            want = base64.b64encode(("%s:%s" % (args.user, args.token)).encode()).decode()
            return h.get("Authorization") == "Basic " + want
        if args.token:
            return h.get("Authorization") == "Bearer " + args.token
        return True

    def reply(self, status, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def handle_any(self, method):
        u = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        bad_json = False
        try:
            # Strict: the bytes must be UTF-8 (RFC 8259 8.1) and JSON.
            body = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            bad_json = True
            body = {"_invalid_json": raw.decode("utf-8", "replace")}
        with lock:
            rec = {"method": method, "path": u.path, "query": parse_qs(u.query),
                   "body": body, "raw_len": len(raw), "auth_ok": self.auth_ok(),
                   "user_agent": self.headers.get("User-Agent"),
                   "accept": self.headers.get("Accept"),
                   "api_version": self.headers.get("X-GitHub-Api-Version"),
                   "content_type": self.headers.get("Content-Type")}
            state["requests"].append(rec)
            if method == "POST" and rec["auth_ok"] and (bad_json or not isinstance(body, dict)):
                status, obj, extra = 400, {"message": "Problems parsing JSON"}, None
            else:
                status, obj, extra = self.route(method, u, body, rec)
            rec["status"] = status
            save()
        self.reply(status, obj, extra)

    def route(self, method, u, body, rec):
        global fail
        if not rec["auth_ok"]:
            return 401, {"message": "Bad credentials"}, None
        if method == "POST" and fail and fail["left"] != 0:
            fail["left"] -= 1
            extra = {"Retry-After": fail["retry_after"]} if fail["retry_after"] else None
            msg = "fake tracker says %d" % fail["status"]
            if args.fail_message is not None:
                msg = args.fail_message
            if args.echo:
                msg += " to " + (self.headers.get("Authorization") or
                                 self.headers.get("PRIVATE-TOKEN") or "")
            return fail["status"], {"message": msg}, extra
        k = args.kind
        p = u.path
        q = parse_qs(u.query)
        if k == "webhook":
            if method == "POST" and isinstance(body, dict):
                state["issues"].append(body)
                return 200, {"ok": True}, None
            return 404, {"message": "not found"}, None
        if k == "github":
            m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues", p)
            if m and method == "GET":
                # As GitHub: state open (the default), closed or all; every
                # label listed; per_page results (default 30, at most 100).
                want = [w for w in q.get("labels", [""])[0].split(",") if w]
                st = q.get("state", ["open"])[0]
                if st not in ("open", "closed", "all"):
                    return 422, {"message": "Validation Failed"}, None
                per = self.per_page(q, 30)
                if per is None:
                    return 422, {"message": "Validation Failed"}, None
                hits = [i for i in state["issues"]
                        if all(w in i["labels"] for w in want)
                        and i.get("repo", m.group(1) + "/" + m.group(2)) ==
                        m.group(1) + "/" + m.group(2)
                        and (st == "all" or i["state"] == st)]
                return 200, [self.gh_issue(i) for i in hits[:per]], None
            if m and method == "POST":
                if not isinstance(body.get("title"), str) or not body["title"] \
                        or not isinstance(body.get("body"), str):
                    return 422, {"message": "Validation Failed"}, None
                num = len(state["issues"]) + 1
                i = {"number": num, "title": body["title"], "body": body["body"],
                     "labels": body.get("labels", []), "state": "open",
                     "repo": m.group(1) + "/" + m.group(2)}
                state["issues"].append(i)
                return 201, self.gh_issue(i), None
            m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", p)
            if m and method == "POST":
                num = int(m.group(3))
                if not any(i["number"] == num for i in state["issues"]):
                    return 404, {"message": "Not Found"}, None
                c = {"issue": num, "body": body["body"]}
                state["comments"].append(c)
                return 201, {"id": len(state["comments"]), "body": c["body"]}, None
        if k == "gitlab":
            m = re.fullmatch(r"/api/v4/projects/([^/]+)/issues", p)
            if m and method == "GET":
                # As GitLab: state opened or closed, all states when absent
                # (GitLab's default); every label listed; per_page results
                # (default 20, at most 100).
                want = [w for w in q.get("labels", [""])[0].split(",") if w]
                st = q.get("state", [None])[0]
                if st not in (None, "opened", "closed", "all"):
                    return 400, {"error": "state does not have a valid value"}, None
                per = self.per_page(q, 20)
                if per is None:
                    return 400, {"error": "per_page is invalid"}, None
                hits = [i for i in state["issues"] if all(w in i["labels"] for w in want)
                        and i["project"] == unquote(m.group(1))
                        and (st in (None, "all") or i["state"] == st)]
                return 200, hits[:per], None
            if m and method == "POST":
                if not isinstance(body.get("title"), str) or not body["title"]:
                    return 400, {"message": {"title": ["can't be blank"]}}, None
                iid = len(state["issues"]) + 1
                i = {"iid": iid, "project": unquote(m.group(1)), "title": body["title"],
                     "description": body["description"],
                     "labels": [l for l in body.get("labels", "").split(",") if l],
                     "state": "opened"}
                state["issues"].append(i)
                return 201, i, None
            m = re.fullmatch(r"/api/v4/projects/([^/]+)/issues/(\d+)/notes", p)
            if m and method == "POST":
                c = {"issue": int(m.group(2)), "body": body["body"]}
                state["comments"].append(c)
                return 201, {"id": len(state["comments"]), "body": c["body"]}, None
        if k == "jira":
            if p in ("/rest/api/2/search", "/rest/api/3/search"):
                if args.jira_dc and p == "/rest/api/2/search" and method == "POST":
                    return self.jira_search_v2(body)
                if not args.jira_dc:
                    return 410, {"errorMessages": [
                        "The requested API has been removed. Please migrate to "
                        "the /rest/api/3/search/jql API. A full migration "
                        "guideline is available at "
                        "https://developer.atlassian.com/changelog/#CHANGE-2046"],
                        "errors": {}}, None
            if p == "/rest/api/3/search/jql" and not args.jira_dc:
                if method == "GET":
                    req = {}
                    for key, v in q.items():
                        req[key] = v[0]
                    if "maxResults" in req:
                        try:
                            req["maxResults"] = int(req["maxResults"])
                        except ValueError:
                            return 400, {"errorMessages": ["maxResults is not a number"], "errors": {}}, None
                    if "fields" in req:
                        req["fields"] = req["fields"].split(",")
                    return self.jira_search_jql(req)
                if method == "POST":
                    return self.jira_search_jql(body)
            if p == "/rest/api/2/issue" and method == "POST":
                f = body.get("fields")
                errs = {}
                if not isinstance(f, dict):
                    return 400, {"errorMessages": ["fields is required"], "errors": {}}, None
                sm = f.get("summary")
                if not isinstance(sm, str) or not sm:
                    errs["summary"] = "You must specify a summary of the issue."
                elif len(sm) > 255:
                    errs["summary"] = "Summary must be less than 255 characters."
                elif "\n" in sm or "\r" in sm:
                    errs["summary"] = "The summary is invalid because it contains newline characters."
                if not isinstance(f.get("description", ""), str):
                    errs["description"] = "Operation value must be a string"
                if any(not isinstance(l, str) or " " in l for l in f.get("labels", [])):
                    errs["labels"] = "The label can't contain spaces."
                if errs:
                    return 400, {"errorMessages": [], "errors": errs}, None
                key = "%s-%d" % (f["project"]["key"], len(state["issues"]) + 1)
                state["issues"].append({"key": key, "id": str(10000 + len(state["issues"]) + 1),
                                        "fields": f})
                return 201, {"id": state["issues"][-1]["id"], "key": key,
                             "self": "http://127.0.0.1/rest/api/2/issue/" + key}, None
            m = re.fullmatch(r"/rest/api/2/issue/([^/]+)/comment", p)
            if m and method == "POST":
                if not isinstance(body.get("body"), str):
                    return 400, {"errorMessages": [], "errors": {"comment": "Comment body can not be empty!"}}, None
                c = {"issue": m.group(1), "body": body["body"]}
                state["comments"].append(c)
                return 201, {"id": str(len(state["comments"])), "body": c["body"]}, None
        return 404, {"message": "Not Found"}, None

    def jira_hits(self, jql):
        """The clauses soak sends, each honoured: project, labels, and
        statusCategory != Done (an issue's status category key "done")."""
        lab = re.search(r'labels = "([^"]+)"', jql)
        proj = re.search(r'project = "([^"]+)"', jql)
        undone = re.search(r'statusCategory != Done', jql)

        def done(i):
            return ((i["fields"].get("status") or {}).get("statusCategory") or {}) \
                .get("key") == "done"
        return [i for i in state["issues"]
                if lab and lab.group(1) in i["fields"].get("labels", [])
                and (not proj or (i["fields"].get("project") or {}).get("key") == proj.group(1))
                and (not undone or not done(i))]

    def jira_issue(self, i, fields):
        out = {"id": i["id"], "key": i["key"],
               "self": "http://127.0.0.1/rest/api/3/issue/" + i["id"]}
        if fields:
            out["fields"] = {f: i["fields"].get(f) for f in fields
                             if f in i["fields"]}
        return out

    def jira_search_jql(self, req):
        """Enhanced search: {jql, maxResults, fields, nextPageToken, ...}."""
        allowed = {"jql", "maxResults", "fields", "nextPageToken", "expand",
                   "properties", "fieldsByKeys", "failFast", "reconcileIssues"}
        if not isinstance(req, dict) or set(req) - allowed:
            return 400, {"errorMessages": ["Invalid request payload: unknown "
                         "field(s) %s" % sorted(set(req or {}) - allowed)], "errors": {}}, None
        jql = req.get("jql")
        if not isinstance(jql, str) or not jql.strip():
            return 400, {"errorMessages": ["Unbounded JQL queries are not "
                         "allowed here. Please add a search restriction to "
                         "your query."], "errors": {}}, None
        mr = req.get("maxResults", 50)
        if not isinstance(mr, int) or isinstance(mr, bool) or not 0 <= mr <= 5000:
            return 400, {"errorMessages": ["maxResults must be between 0 and 5000"], "errors": {}}, None
        fields = req.get("fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            return 400, {"errorMessages": ["fields must be a list of strings"], "errors": {}}, None
        start = 0
        if "nextPageToken" in req:
            try:
                start = int(req["nextPageToken"])
            except (TypeError, ValueError):
                return 400, {"errorMessages": ["Invalid nextPageToken"], "errors": {}}, None
        hits = self.jira_hits(jql)
        page = hits[start:start + mr]
        out = {"issues": [self.jira_issue(i, fields) for i in page],
               "isLast": start + mr >= len(hits)}
        if not out["isLast"]:
            out["nextPageToken"] = str(start + mr)
        return 200, out, None

    def jira_search_v2(self, body):
        """Jira Data Center's /rest/api/2/search (--jira-dc only)."""
        hits = self.jira_hits(body.get("jql", ""))
        mr = body.get("maxResults", 50)
        return 200, {"startAt": 0, "maxResults": mr, "total": len(hits),
                     "issues": [{"key": i["key"], "fields": {"summary": i["fields"]["summary"]}}
                                for i in hits[:mr]]}, None

    def per_page(self, q, default):
        try:
            per = int(q.get("per_page", [str(default)])[0])
        except ValueError:
            return None
        return per if 1 <= per <= 100 else None

    def gh_issue(self, i):
        return {"number": i["number"], "title": i["title"], "body": i["body"],
                "state": i["state"], "labels": [{"name": l} for l in i["labels"]],
                "html_url": "http://127.0.0.1/issues/%d" % i["number"]}


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
save()
print(srv.server_address[1], flush=True)
srv.serve_forever()
