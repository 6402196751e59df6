"""A benchmark's server in a child process: started, its URL read from its first output line, always stopped."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


class Child:
    """A server child process in its own process group; its first stdout line names the URL; always stopped."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.argv, self.log = argv, log

    def cpu_seconds(self) -> float:
        """User plus system CPU the child has used so far (Linux ``/proc``)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> str:
        """Start the child and return the URL its first stdout line names (``... serving URL ...``)."""
        self.log_file = open(self.log, "w")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=self.log_file, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if "serving" not in line:
            self.__exit__()
            raise SystemExit(f"{self.argv}: did not start: {line}{self.log.read_text()}")
        return line.split("serving", 1)[1].split()[0]

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()
        self.log_file.close()
