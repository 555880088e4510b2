"""WAD fixed point (10**18 is 1.0) as the service writes it: decimal strings."""

WAD = 10**18


def format_wad(text: str, places: int = 4) -> str:
    """A WAD decimal string cut (never rounded, as the WAD math floors) to
    `places` decimals: format_wad("888888888888888888") is "0.8888"."""
    value = int(text)
    whole, fraction = divmod(value, WAD)
    if places <= 0:
        return str(whole)
    return f"{whole}.{str(fraction).rjust(18, '0')[:places]}"
