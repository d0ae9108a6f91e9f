"""reports/: figures in the style of the papers' and machine-checked claims, generated from the runs."""
