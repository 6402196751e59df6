# expect: 7
# proves: (7) processes started in a new session, or double-forked, do not outlive grading (and gain nothing)
# %% before classify_probe
import os, subprocess, sys
subprocess.Popen(["sleep", "611.5"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "612.5"])
    os._exit(0)
print("started two processes that try to outlive the kernel")
# %% answer classify_probe
{{solution classify_probe}}
# %% answer may_use_legacy
{{solution may_use_legacy}}
