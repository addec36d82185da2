"""Unit tests: no database (language-model calls go to the scripted local HTTP server)."""
