"""The MirrorMaker 2 configuration editor's forms: the text as typed, then the text confirmed
with the offset of the configuration its diff was made from."""

from __future__ import annotations

from django import forms

CONFIG_TEXT_MAX = 1_048_576  # the API's own limit (mirror.api.serializers.ConfigTextSerializer)


def normalized(text: str) -> str:
    """The text with the browser's CRLF line ends (HTML form submission) back to LF: the stored
    text and its diff then match what was typed, not how a form encodes it."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


class MirrorConfigForm(forms.Form):
    text = forms.CharField(
        label="mm2.properties",
        required=False,  # an empty text is the API's to refuse (clusters is required)
        strip=False,
        max_length=CONFIG_TEXT_MAX,
        widget=forms.Textarea(
            attrs={"class": "config-text mono", "spellcheck": "false", "rows": 24}
        ),
    )

    def clean_text(self) -> str:
        return normalized(str(self.cleaned_data.get("text") or ""))


class MirrorConfigApplyForm(forms.Form):
    """The text exactly as its diff showed it, and the offset of the stored configuration the
    diff was made from (-1: none was stored): a change in between is shown again first."""

    text = forms.CharField(
        widget=forms.HiddenInput, required=False, strip=False, max_length=CONFIG_TEXT_MAX
    )
    base_offset = forms.IntegerField(widget=forms.HiddenInput, min_value=-1)

    def clean_text(self) -> str:
        return normalized(str(self.cleaned_data.get("text") or ""))
