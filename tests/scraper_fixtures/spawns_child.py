"""A design that leaves a child process behind; killing the process group must take the child too."""

import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
time.sleep(600)
