"""The simulation that composes the processes: rounds in descriptor order sliced by
time (``simulation``) and the memory a run needs, checked before it starts
(``memory``)."""
