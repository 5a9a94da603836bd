"""The names of the domain's timer handlers, one per kind (place) of time a Service or a person keeps.

Each is stored in every timer's row (``Timer.handler``), so a name never changes once released; the handlers
are registered under them in ``ServicesConfig.ready`` (``handlers.py``, ``people_handlers.py``). Pure: the
modules that arm a kind and the ones that fire it import its name from here, not from each other.

People's keys (the occurrence names the step's entry, never a date):
    job_…:task:hold <step>:#<entry> take <n>[@m]     the hold's end (m: its extension)
    job_…:task:warn <step>:#<entry> take <n>[@m]     three quarters of the hold
    job_…:ask:remind <step>:#<entry> link <n>        a day before the link expires
    job_…:ask:expire <step>:#<entry> link <n>        the link expires (n = 1, then 2)
    job_…:ask:grant <scope>:#<n>                      the nth grant's term ends
    job_…:deadline:<step> at_risk:#<entry>            the step's deadline (deliver.<step>.within)
    win_…:window:standby:open                          a standby window closes
"""

CYCLE = "services.cycle"  # a subscription's renewal (place 1)
SCHEDULE = "services.schedule"  # a schedule's mint of the period's job (place 2)
DEADLINE = "services.deadline"  # a job's at-risk and late points (place 5)
MONEY = "services.money"  # a money line collected (place 8)
UPDATE = "services.update"  # a subscription update scheduled on a test clock
SIGNAL = "services.signal"  # a job silent for its signal's span
SUBJECT_EVENT = "services.subject_event"  # an event on a subject scheduled on a test clock
TASK = "services.task"  # a Task's hold: its warning and its end (place 4)
ASK = "services.ask"  # a party's link: its reminder and its expiry; a grant's end (place 3)
WINDOW = "services.window"  # a standby window closes (place 7)
STEP_DEADLINE = "services.step_deadline"  # a step's at-risk and late points (place 5)
ACT = "services.act"  # a person's act scheduled on a test clock
