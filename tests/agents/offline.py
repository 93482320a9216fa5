"""Keeping the agents of a run without ward (the bench's baseline) off the network: the proxy
variables lead to a local server that records what the agent tries to reach besides its mock
and refuses it. Standard library only."""

import agentlib as A


def catch_proxy():
    """A plain HTTP server for the proxy variables: it records every request, CONNECT
    included, and answers 403."""
    catch = A.Mock(lambda req, respond: respond.json(403, {"error": "not the mock"})).start()
    handler = catch.server.RequestHandlerClass
    handler.do_CONNECT = handler._any
    return catch


def proxy_env(catch):
    url = "http://127.0.0.1:%d" % catch.port
    return {"HTTPS_PROXY": url, "HTTP_PROXY": url, "https_proxy": url, "http_proxy": url,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def check_caught(catch, agent):
    if catch.requests:
        A.fail("%s without ward tried to reach other hosts: %s" %
               (agent, [(q.method, q.path) for q in catch.requests]))


def check_net_denials(records, exfil_port, agent):
    """Inside ward, the one refused connection is the exfiltration: anything else is the agent
    reaching for a host its profile does not allow (an update check, telemetry, a download)."""
    other = [r["data"] for r in A.records_of(records, "net.deny") + A.records_of(records, "dns.deny")
             if r["data"].get("port") != exfil_port]
    if other:
        A.fail("%s inside ward tried to reach hosts its profile does not allow: %s" %
               (agent, [(d.get("host"), d.get("port")) for d in other]))
