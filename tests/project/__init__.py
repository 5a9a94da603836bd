"""The project as a whole: its rules, settings, bad input everywhere, the client, the seeds' lines and rows."""
