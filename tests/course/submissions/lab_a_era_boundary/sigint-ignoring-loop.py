# expect: 3
# proves: (8) a loop that ignores SIGINT is killed; the exercise that finished before it keeps its points and feedback is written
# %% answer classify_probe
{{solution classify_probe}}
# %% answer may_use_legacy
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass
