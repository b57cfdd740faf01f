"""A sleep at import."""
import time

time.sleep(0.05)
