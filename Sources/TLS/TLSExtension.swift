/// One extension as it appears in a hello or EncryptedExtensions (RFC 8446 §4.2).
package struct TLSExtension: Sendable, Equatable {
    package var type: ExtensionType
    package var data: [UInt8]

    package init(type: ExtensionType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    /// The `extensions<..2^16-1>` vector: §4.2 forbids two of one type.
    package static func readList(_ reader: inout TLSReader) throws(TLSError) -> [TLSExtension] {
        var list = try reader.vector(lengthSize: 2)
        var extensions: [TLSExtension] = []
        var seen = Set<UInt16>()
        while !list.isAtEnd {
            let type = try list.u16()
            let data = try list.vectorBytes(lengthSize: 2)
            guard seen.insert(type).inserted else { throw TLSError(.illegalParameter, "extension \(type) appears twice") }
            extensions.append(TLSExtension(type: ExtensionType(rawValue: type), data: data))
        }
        return extensions
    }

    package static func writeList(_ extensions: [TLSExtension], to writer: inout TLSWriter) {
        writer.vector(lengthSize: 2) { list in
            for item in extensions {
                list.u16(item.type.rawValue)
                list.vector(lengthSize: 2, bytes: item.data)
            }
        }
    }
}

extension [TLSExtension] {
    package subscript(type: ExtensionType) -> [UInt8]? { first { $0.type == type }?.data }
}

/// The ALPN extension's body (RFC 7301 §3.1): a list of non-empty names.
package enum ApplicationProtocols {
    package static func decode(_ data: [UInt8]) throws(TLSError) -> [[UInt8]] {
        var reader = TLSReader(data)
        var list = try reader.vector(lengthSize: 2)
        try reader.expectEnd("ALPN")
        var names: [[UInt8]] = []
        while !list.isAtEnd {
            let name = try list.vectorBytes(lengthSize: 1)
            guard !name.isEmpty else { throw TLSError(.decodeError, "an empty ALPN name") }
            names.append(name)
        }
        guard !names.isEmpty else { throw TLSError(.decodeError, "an empty ALPN list") }
        return names
    }

    package static func encode(_ names: [[UInt8]]) -> [UInt8] {
        var writer = TLSWriter()
        writer.vector(lengthSize: 2) { list in
            for name in names { list.vector(lengthSize: 1, bytes: name) }
        }
        return writer.bytes
    }
}
