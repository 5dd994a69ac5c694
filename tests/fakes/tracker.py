#!/usr/bin/env python3
"""Fake issue tracker for soak's ticket tests (stdlib only, loopback only).

Implements the documented request/response shapes of the calls soak makes:

  github   GET  /repos/{o}/{r}/issues?state=open&labels=L     -> [issue]
           POST /repos/{o}/{r}/issues {title, body, labels}   -> 201 issue
           POST /repos/{o}/{r}/issues/{n}/comments {body}     -> 201 comment
           auth: "Authorization: Bearer TOKEN"
  gitlab   GET  /api/v4/projects/{id}/issues?state=opened&labels=L -> [issue]
           POST /api/v4/projects/{id}/issues {title, description, labels:"a,b"}
           POST /api/v4/projects/{id}/issues/{iid}/notes {body}
           auth: "PRIVATE-TOKEN: TOKEN"
  jira     POST /rest/api/2/search {jql, maxResults, fields}  -> {issues:[{key}]}
           POST /rest/api/2/issue {fields:{project:{key}, summary, description,
                issuetype:{name}, labels}}                    -> 201 {id, key, self}
           POST /rest/api/2/issue/{key}/comment {body}        -> 201
           auth: Basic base64(user:TOKEN)
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
ap.add_argument("--echo", action="store_true",
                help="a --fail reply quotes the request's credentials back, "
                     "as a careless proxy might")
args = ap.parse_args()

lock = threading.Lock()
state = {"requests": [], "issues": [], "comments": []}
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
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = {"_invalid_json": raw.decode("utf-8", "replace")}
        with lock:
            rec = {"method": method, "path": u.path, "query": parse_qs(u.query),
                   "body": body, "auth_ok": self.auth_ok(),
                   "user_agent": self.headers.get("User-Agent"),
                   "accept": self.headers.get("Accept"),
                   "api_version": self.headers.get("X-GitHub-Api-Version"),
                   "content_type": self.headers.get("Content-Type")}
            state["requests"].append(rec)
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
                want = q.get("labels", [""])[0].split(",")
                open_ = q.get("state", ["open"])[0] == "open"
                hits = [i for i in state["issues"]
                        if all(w in i["labels"] for w in want)
                        and (not open_ or i["state"] == "open")]
                return 200, [self.gh_issue(i) for i in hits], None
            if m and method == "POST":
                if not body or "title" not in body or "body" not in body:
                    return 422, {"message": "Validation Failed"}, None
                num = len(state["issues"]) + 1
                i = {"number": num, "title": body["title"], "body": body["body"],
                     "labels": body.get("labels", []), "state": "open"}
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
                want = q.get("labels", [""])[0].split(",")
                hits = [i for i in state["issues"] if all(w in i["labels"] for w in want)
                        and i["project"] == unquote(m.group(1))]
                return 200, hits, None
            if m and method == "POST":
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
            if p == "/rest/api/2/search" and method == "POST":
                jql = body.get("jql", "")
                m = re.search(r'labels = "([^"]+)"', jql)
                hits = [i for i in state["issues"] if m and m.group(1) in i["fields"]["labels"]]
                return 200, {"startAt": 0, "maxResults": body.get("maxResults", 50),
                             "total": len(hits),
                             "issues": [{"key": i["key"], "fields": {"summary": i["fields"]["summary"]}}
                                        for i in hits[:body.get("maxResults", 50)]]}, None
            if p == "/rest/api/2/issue" and method == "POST":
                f = body["fields"]
                key = "%s-%d" % (f["project"]["key"], len(state["issues"]) + 1)
                state["issues"].append({"key": key, "fields": f})
                return 201, {"id": str(10000 + len(state["issues"])), "key": key,
                             "self": "http://127.0.0.1/rest/api/2/issue/" + key}, None
            m = re.fullmatch(r"/rest/api/2/issue/([^/]+)/comment", p)
            if m and method == "POST":
                c = {"issue": m.group(1), "body": body["body"]}
                state["comments"].append(c)
                return 201, {"id": str(len(state["comments"])), "body": c["body"]}, None
        return 404, {"message": "Not Found"}, None

    def gh_issue(self, i):
        return {"number": i["number"], "title": i["title"], "body": i["body"],
                "state": i["state"], "labels": [{"name": l} for l in i["labels"]],
                "html_url": "http://127.0.0.1/issues/%d" % i["number"]}


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
save()
print(srv.server_address[1], flush=True)
srv.serve_forever()
