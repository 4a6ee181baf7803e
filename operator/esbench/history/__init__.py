"""Results that outlive their cluster: every finished race recorded, and its figures as series."""
