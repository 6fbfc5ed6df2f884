/// Conversion between UTC calendar dates (proleptic Gregorian) and seconds
/// since 1970-01-01T00:00:00Z, for the certificate validity times of
/// RFC 5280 §4.1.2.5. No leap seconds: RFC 5280 times never have second 60.
/// Years 0001...9999, the range GeneralizedTime's four digits allow (0000 is
/// refused).
package enum CivilTime {
    package struct Fields: Equatable, Sendable {
        package var year: Int
        package var month: Int
        package var day: Int
        package var hour: Int
        package var minute: Int
        package var second: Int
    }

    /// `seconds` as RFC 3339 UTC ("2026-12-05T16:15:17Z"), for messages; the
    /// number itself outside years 0001...9999.
    package static func text(_ seconds: Int64) -> String {
        guard let f = fields(seconds) else { return "\(seconds) (Unix time)" }
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(f.year, 4))-\(pad(f.month, 2))-\(pad(f.day, 2))T\(pad(f.hour, 2)):\(pad(f.minute, 2)):\(pad(f.second, 2))Z"
    }

    private static let secondsPerDay: Int64 = 86_400
    /// Days from 0001-01-01 to 1970-01-01.
    private static let epochDayNumber = daysBeforeYear(1970)
    /// Days in 400 Gregorian years, which repeat exactly.
    private static let daysPer400Years = 146_097

    package static let earliest: Int64 = (Int64(daysBeforeYear(1)) - Int64(epochDayNumber)) * secondsPerDay
    package static let latest: Int64 = (Int64(daysBeforeYear(10_000)) - Int64(epochDayNumber)) * secondsPerDay - 1

    static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 0001-01-01 to January 1st of `year` (year >= 1).
    private static func daysBeforeYear(_ year: Int) -> Int {
        let previous = year - 1
        return previous * 365 + previous / 4 - previous / 100 + previous / 400
    }

    private static func daysBeforeMonth(_ month: Int, year: Int) -> Int {
        var days = 0
        for earlier in stride(from: 1, to: month, by: 1) { days += daysInMonth(earlier, year: year) }
        return days
    }

    /// Seconds since the epoch, after checking every field's range.
    package static func seconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)
        throws(DERError) -> Int64
    {
        guard (1...9999).contains(year) else { throw .invalidContent("time: year out of range") }
        guard (1...12).contains(month) else { throw .invalidContent("time: month out of range") }
        guard day >= 1, day <= daysInMonth(month, year: year) else { throw .invalidContent("time: day out of range") }
        guard (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else {
            throw .invalidContent("time: hour, minute or second out of range")
        }
        let dayNumber = daysBeforeYear(year) + daysBeforeMonth(month, year: year) + day - 1
        let days = Int64(dayNumber - epochDayNumber)
        return days * secondsPerDay + Int64(hour * 3600 + minute * 60 + second)
    }

    /// The calendar fields of `seconds`, or nil outside years 0001...9999.
    package static func fields(_ seconds: Int64) -> Fields? {
        guard seconds >= earliest, seconds <= latest else { return nil }
        // Floor division, so times before 1970 land on the previous day.
        var days = seconds / secondsPerDay
        var secondOfDay = seconds % secondsPerDay
        if secondOfDay < 0 {
            secondOfDay += secondsPerDay
            days -= 1
        }
        // Day number counted from 0001-01-01, split into 400-, 100-, 4- and
        // 1-year cycles (the last year of a 100- or 4-year cycle is the one
        // that can be one day longer).
        var remaining = Int(days) + epochDayNumber
        let cycles400 = remaining / daysPer400Years
        remaining %= daysPer400Years
        let cycles100 = min(remaining / 36_524, 3)
        remaining -= cycles100 * 36_524
        let cycles4 = remaining / 1_461
        remaining %= 1_461
        let years = min(remaining / 365, 3)
        remaining -= years * 365
        let year = cycles400 * 400 + cycles100 * 100 + cycles4 * 4 + years + 1
        var month = 1
        while remaining >= daysInMonth(month, year: year) {
            remaining -= daysInMonth(month, year: year)
            month += 1
        }
        let second = Int(secondOfDay)
        return Fields(
            year: year, month: month, day: remaining + 1, hour: second / 3600, minute: second / 60 % 60,
            second: second % 60)
    }
}
