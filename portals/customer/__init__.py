"""The customer portal: what a brand's customer sees, opened by a link that carries its own token."""
