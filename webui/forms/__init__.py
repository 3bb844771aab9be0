"""Forms from JSON schema: schema -> node tree -> bound view model -> HTML (macros); form -> value.

Usage::

    node = build_form(Action.model_json_schema())
    bound = bind(node, {"message": "hi"})          # render with templates/_form_widgets.html
    value, errors = parse_form(node, form_multidict)
    loose = attach_errors(bind(node, value), server_errors)

Widgets follow the schema, never field names:

==============================================  =============================================
schema                                          widget
==============================================  =============================================
``string``                                      one-line input (``format`` email/uri/date/
                                                date-time/time/password pick the input type)
``string`` + ``format: textarea|multiline``     textarea (also ``"multiline": true`` or
                                                ``"widget": "textarea"``)
``string`` + ``format: code`` or ``language``   monospace code editor
``integer`` / ``number``                        number input; min/max/step from the bounds
``boolean``                                     checkbox
``enum``, ``const`` unions (Enum, Literal)      select
``anyOf [X, null]`` (``X | None``)              X's widget plus a "none" box
object with ``properties`` (models, ``$ref``)   fieldset of its fields
``array`` of a typed item                       rows with add/remove, min/max items
``oneOf``/``anyOf`` (discriminated or not)      variant select swapping the sub-form
anything else (dicts, Any, tuples, recursion)   JSON editor
==============================================  =============================================

In pydantic: ``Field(json_schema_extra={"format": "code", "language": "python"})``.
Nothing here knows about the env server, so the studio reuses it as is.
"""

from __future__ import annotations

from webui.forms.bind import Bound, Invalid, bind, escape_key, pick_variant, placeholder
from webui.forms.errors import attach_errors
from webui.forms.parse import parse_form, strip_invalid
from webui.forms.schema import MISSING, Node, build_form

__all__ = [
    "MISSING",
    "Bound",
    "Invalid",
    "Node",
    "attach_errors",
    "bind",
    "build_form",
    "escape_key",
    "parse_form",
    "pick_variant",
    "placeholder",
    "strip_invalid",
]
