# expect: 7
# proves: (extra) the grader's environment variables, home folder and host loopback services are out of reach
# %% before classify_probe
import os, socket, urllib.request
print("environment:", sorted(os.environ.items()))
print("home:", sorted(os.listdir(os.path.expanduser("~"))))
port = {{host_port}}
for p in filter(None, [port, 8888, 8765]):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{p}/steal", timeout=2).read()
        print("reached host port", p)
    except Exception as exc:
        print("port", p, "unreachable:", type(exc).__name__)
# %% answer classify_probe
{{solution classify_probe}}
# %% answer may_use_legacy
{{solution may_use_legacy}}
