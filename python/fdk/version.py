"""The fdk-python release whose API this package provides."""

VERSION = "0.1.117"
