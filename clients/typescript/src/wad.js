// WAD fixed point (10^18 is 1.0) as the service writes it: decimal strings.

export const WAD = 10n ** 18n;

/** A WAD decimal string cut (never rounded, as the WAD math floors) to
 *  `places` decimals: formatWad("888888888888888888") is "0.8888". */
export function formatWad(text, places = 4) {
  const value = BigInt(text);
  const fraction = (value % WAD).toString().padStart(18, "0").slice(0, places);
  return places > 0 ? `${value / WAD}.${fraction}` : `${value / WAD}`;
}
