// CalendarTime exists because logs are read by people and by jq: times print
// as RFC 3339 in UTC (`2026-11-30T15:40:51.123456Z`), computed here from
// nanoseconds since the epoch without Foundation or the C library's tables.

public enum CalendarTime {
    /// `2026-11-30T15:40:51.123456Z`: microseconds, always six digits.
    public static func rfc3339(_ nanoseconds: UInt64) -> String {
        let seconds = Int64(nanoseconds / 1_000_000_000)
        let micros = Int(nanoseconds % 1_000_000_000 / 1000)
        let days = seconds / 86_400
        let secondOfDay = Int(seconds % 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        var text = pad(Int(year), 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        text += "." + pad(micros, 6) + "Z"
        return text
    }

    /// The proleptic Gregorian date of a day count from 1970-01-01. Works in
    /// 400-year eras (146,097 days each), with years starting on 1 March so
    /// the leap day falls at the end of a year.
    static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int, day: Int) {
        let shifted = days + 719_468 // days from 0000-03-01 to 1970-01-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
        let month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
