"""The field types of the report and trace models: each says, when refused, what it expected in words
("expected a list of strings, got null") rather than in pydantic's terms."""
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, WrapValidator
from pydantic_core import PydanticCustomError

from whichstage.model.errors import kind


class Open(BaseModel):
    """A JSON object of which the model types the fields it names; other fields are kept unchecked."""
    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)


def shape_error(at: tuple, text: str) -> PydanticCustomError:
    """A check across fields refusing the field at `at` (a path below the model that raises it)."""
    return PydanticCustomError("shape", "{text}", {"text": text, "at": at})


def wanted(text: str) -> WrapValidator:
    """Refuse a value of the wrong JSON type as 'expected `text`, got a list'; errors inside it pass through."""
    def check(value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError as e:
            if any(not error["loc"] and error["type"] != "shape" for error in e.errors()):
                raise PydanticCustomError("wanted", "expected {wanted}, got {got}",
                                          {"wanted": text, "got": kind(value)}) from None
            raise
    return WrapValidator(check)


Str = Annotated[str, wanted("a string")]
MaybeStr = Annotated[Optional[str], wanted("a string or null")]
Strings = Annotated[list[str], wanted("a list of strings")]
Number = Annotated[float, wanted("a number")]
MaybeNumber = Annotated[Optional[float], wanted("a number or null")]
Whole = Annotated[int, wanted("a whole number")]
Flag = Annotated[bool, wanted("a boolean")]
Object = Annotated[dict[str, Any], wanted("an object")]
StageName = Annotated[Optional[str], wanted("a stage name or null")]


def scalar(value: Any) -> Any:
    if value is not None and not isinstance(value, (str, int, float)):
        raise PydanticCustomError("wanted", "expected a string, number, boolean or null, got {got}",
                                  {"got": kind(value)})
    return value


Scalar = Annotated[Optional[Union[str, bool, int, float]], BeforeValidator(scalar)]  # any JSON scalar

T = TypeVar("T")
if TYPE_CHECKING:
    # A field that may be absent, as `failures: Absent[Strings] = None`: its attribute is None then (the
    # default, which pydantic never validates), while a null given is refused as its type says. A type checker
    # reads the attribute as Optional; pydantic reads the type alone.
    Absent = Optional[T]
else:
    class Absent:
        def __class_getitem__(cls, item: Any) -> Any:
            return item
