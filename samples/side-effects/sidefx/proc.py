"""A subprocess at import."""
import subprocess

subprocess.run(["/bin/true"], check=True)
