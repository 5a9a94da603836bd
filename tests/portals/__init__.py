"""The three apps people use: the owner console, the customer portal, the delivery portal (browsers too)."""
