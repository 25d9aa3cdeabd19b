import BiometricProtocol
import BiometricStore
import Logging

extension StoredUser {
    var wire: UserRecord {
        UserRecord(name: name, uuid: uuid, created: created, faceTemplates: faceTemplates,
                   fingerTemplates: fingerTemplates, pinSet: pinSet, policy: policy)
    }
}

/// user.*: the enrolled users (SPEC §4).
struct UserMethods: MethodGroup {
    let templates: TemplateRepository
    let policy: AccessPolicy
    let logger: Logger

    var store: Store { templates.store }

    func register(in table: inout MethodTable) {
        table.register(Method.userList, .admin("user.list"), userList)

        table.register(Method.userGet, .selfOrAdmin("read") { $0.user }, userGet)

        // Removes the user and every template of theirs, in one transaction.
        table.register(Method.userDelete, .selfReverifiedOrAdmin("delete") { $0.user }, userDelete)
    }

    // MARK: Handlers, one per method, named after it

    /// user.list
    func userList(_ context: CallContext, _ params: NoParams) async throws -> UserList {
        return UserList(users: try store.users.all().map(\.wire))
    }

    /// user.get
    func userGet(_ context: CallContext, _ params: UserParams) async throws -> UserRecord {
        guard let user = try store.users.named(params.user) else {
            throw RPCError.userNotEnrolled(params.user)
        }
        return user.wire
    }

    /// user.delete
    func userDelete(_ context: CallContext, _ params: UserParams) async throws -> DeleteResult {
        do {
            let removed = try templates.deleteUser(named: params.user)
            logger.notice("user '\(params.user)' deleted by uid \(context.peer.uid) (\(removed) templates)")
            return DeleteResult(deleted: true, templatesRemoved: removed)
        } catch {
            guard let refusal = error as? StoreError, case .notFound = refusal else { throw error }
            throw RPCError.userNotEnrolled(params.user)
        }
    }
}
