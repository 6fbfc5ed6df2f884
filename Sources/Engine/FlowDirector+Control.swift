internal import HTTP
internal import Rules

/// What the control API shows of the profile, for the tunnel and the proxy
/// alike: its groups, listed and switched (`GET /groups`, `PUT /groups/NAME`),
/// its path and its [Statistics] books (`GET /stats`).
extension FlowDirector {
    func controlGroups() -> [ControlGroup] {
        guard let profile else { return [] }
        return profile.groups.map { definition in
            let state = groups[definition.name]
            let members = definition.members.map { name in
                let health = state?.health(of: name) ?? .unchecked
                switch health {
                case .unchecked: return ControlGroup.Member(name: name, health: "unchecked")
                case .down: return ControlGroup.Member(name: name, health: "down")
                case let .healthy(latency):
                    return ControlGroup.Member(name: name, health: "healthy", latencyMilliseconds: Int((latency + 500_000) / 1_000_000))
                }
            }
            return ControlGroup(name: definition.name, kind: definition.kind.rawValue,
                                selected: state?.current ?? definition.members.first, members: members)
        }
    }

    /// Switches a select group: new flows follow the member; open ones keep their routes.
    func select(group name: String, member: String) -> Result<String, ControlFailure> {
        guard var group = groups[name], let definition = profile?.groups.first(where: { $0.name == name }) else {
            return .failure(ControlFailure(kind: .notFound, message: "no proxy group named '\(name)'"))
        }
        let previous = group.current
        do {
            try group.select(member)
        } catch {
            switch error {
            case .notSelectable:
                return .failure(ControlFailure(kind: .conflict, message: "'\(name)' is a \(definition.kind.rawValue) group: it chooses by health, not by hand"))
            case .unknownMember:
                return .failure(ControlFailure(kind: .notFound,
                                               message: "'\(member)' is not a member of '\(name)' (members: \(definition.members.joined(separator: ", ")))"))
            case .empty, .duplicateMember, .cycle, .tooDeep:
                return .failure(ControlFailure(kind: .conflict, message: error.description))
            }
        }
        groups[name] = group
        return .success("\(name): \(previous) → \(member); new flows use \(member), open ones keep their routes")
    }

    /// `GET /stats`'s `profile` (null on the built-in default) and `statistics` (the [Statistics] books).
    func writeProfileAndBooks(into json: inout JSONWriter) {
        json.key("profile")
        if let profile { json.string(profile.file) } else { json.null() }
        json.key("statistics")
        json.beginArray()
        for book in books { book.writeJSON(into: &json) }
        json.endArray()
    }
}
