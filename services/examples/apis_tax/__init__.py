"""apis.tax: an annual return, quarterly estimates, and the Tax Plan that orders them (DESIGN.md)."""
