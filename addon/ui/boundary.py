"""The one error boundary of the add-on's operators.

Every user mistake is a :class:`simcore.errors.UserError` (grid problems, parameters,
presets, files, memory, an ended run) whose message says what to do. An operator's
``execute`` or ``invoke`` (or a helper an operator returns through) decorated with
:func:`reports_user_errors` reports that message and returns ``{'CANCELLED'}``;
anything else is a bug and stays a traceback::

    @reports_user_errors
    def execute(self, context):
        ...

Clean-up before the report (put the mesh back) stays with the operator: catch, clean
up, re-raise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..simcore.errors import UserError

#: Everything a user can cause (grid problems, parameters, files, an ended run).
USER_ERRORS = (UserError,)


def _report(op, level: str, method: Callable, *args):
    try:
        return method(op, *args)
    except USER_ERRORS as exc:
        op.report({level}, str(exc))
        return {'CANCELLED'}


def reports_user_errors(method: Callable | None = None, *, level: str = 'ERROR'):
    """Decorator: a :data:`USER_ERRORS` raised by ``method`` is reported at ``level``
    ('ERROR', or 'WARNING' where the operator's work is already done) and the method
    returns ``{'CANCELLED'}``. The wrapper keeps ``method``'s number of arguments:
    Blender checks it when it registers an operator (``execute(self, context)``,
    ``invoke(self, context, event)``)."""
    if method is None:
        return functools.partial(reports_user_errors, level=level)
    count = method.__code__.co_argcount
    if count == 2:
        def wrapper(self, context):
            return _report(self, level, method, context)
    elif count == 3:
        def wrapper(self, context, event):
            return _report(self, level, method, context, event)
    else:
        def wrapper(self, *args, **kwargs):
            return _report(self, level, functools.partial(method, **kwargs), *args)
    return functools.wraps(method)(wrapper)
