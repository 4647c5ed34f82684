"""A misspelt key under [tools.NAME] in evals.toml is named as the unknown key it is, with the valid keys."""
import pytest

from whichstage.model.errors import InputError
from whichstage.project.config import tool_role


def test_a_misspelt_role_is_named_as_the_unknown_key_with_the_valid_keys():
    with pytest.raises(InputError) as caught:
        tool_role("cancel_rental", {"rol": "action"})
    assert str(caught.value) == ("evals.toml: tools.cancel_rental.rol: unknown key for a tool (valid: role, ids, "
                                 "page, page_pattern, records, key)")
