"""api.forsale: a domain-name broker. A deal desk plan mints a deal per ``deal.opened`` on an account; the
deal is appraised by a broker (a Task with a hold), offered to the buyer (a link that expires), and
transferred by a broker once the buyer grants registrar access (a grant with a term)."""
