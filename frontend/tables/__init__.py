"""Rows for the UI's pages, one module per area, built from data the selectors read: no
queries here."""
