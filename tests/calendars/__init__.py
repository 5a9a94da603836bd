"""Business calendars, subjects and clocks, the subject calendar and its feed, the words people read."""
