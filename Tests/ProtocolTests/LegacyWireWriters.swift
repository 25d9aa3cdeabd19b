import BiometricProtocol
import Foundation

// The hand-written writers of events and daemon.status as they were on main before issue 38's
// item 1 (copied verbatim, renamed `legacy…`), kept only here: the one Codable path
// (JSONValueEncoder → JSONWriter) must write the bytes they wrote (LegacyWireTests).

extension FaceFrameEvent {
    var legacyFields: [String: JSONValue] {
        var f: [String: JSONValue] = [
            "box": box.map(\.legacyJSON) ?? .null,
            "yaw": .orNull(yaw), "pitch": .orNull(pitch), "roll": .orNull(roll),
            "quality": .int(Int64(quality)),
            "brightness": .orNull(brightness), "sharpness": .orNull(sharpness),
            "feedback": .array(feedback.map { .string($0.rawValue) }),
            "liveness_action": livenessAction.map { .string($0.rawValue) } ?? .null,
            "liveness_score": .int(Int64(livenessScore)),
            "countdown_s": countdownS.map { .int(Int64($0)) } ?? .null,
            "extraction": extraction.map { .string($0.rawValue) } ?? .null,
            "frames_captured": .int(Int64(framesCaptured)),
            "frames_needed": .int(Int64(framesNeeded)),
        ]
        if let faces { f["faces"] = .int(Int64(faces)) }
        if let frameWidth, let frameHeight {
            f["frame_width"] = .int(Int64(frameWidth))
            f["frame_height"] = .int(Int64(frameHeight))
        }
        if let preview { f["preview"] = preview.legacyJSON }
        return f
    }
}

extension FingerFrameEvent {
    var legacyFields: [String: JSONValue] {
        let r = distanceRange
        var f: [String: JSONValue] = [
            "fingers": .array(fingers.map { f in
                .object(["position": .string(f.position), "box": f.box.legacyJSON, "angle": .double(f.angle),
                         "quality": .string(f.quality.rawValue)])
            }),
            "distance": .orNull(distance),
            "distance_range": .object(["min": .double(r.min), "optimal_min": .double(r.optimalMin),
                                       "optimal_max": .double(r.optimalMax), "max": .double(r.max)]),
            "feedback": .string(feedback.rawValue),
            "frames_captured": .int(Int64(framesCaptured)),
            "frames_needed": .int(Int64(framesNeeded)),
        ]
        if let frameWidth, let frameHeight {
            f["frame_width"] = .int(Int64(frameWidth))
            f["frame_height"] = .int(Int64(frameHeight))
        }
        if let preview { f["preview"] = preview.legacyJSON }
        return f
    }
}

extension AuthFactorEvent {
    var legacyFields: [String: JSONValue] {
        ["factor": .string(factor), "name": .string(name), "index": .int(Int64(index)), "of": .int(Int64(of))]
    }
}

extension CameraChangeEvent {
    var legacyFields: [String: JSONValue] {
        // CameraInfo is plain values: encoding cannot fail.
        ["camera": (try? legacyJSONValue(encoding: camera)) ?? .null]
    }
}

extension PixelRect {
    var legacyJSON: JSONValue {
        .object(["x": .int(Int64(x)), "y": .int(Int64(y)), "width": .int(Int64(width)), "height": .int(Int64(height))])
    }
}

extension JSONValue {
    static func orNull(_ value: Double?) -> JSONValue { value.map { .double($0) } ?? .null }
}

/// JSONValue(encoding:) as it was: JSONEncoder's bytes read back by JSONDecoder.
func legacyJSONValue<T: Encodable>(encoding value: T) throws -> JSONValue {
    try JSONCoding.decoder.decode(JSONValue.self, from: try JSONCoding.encoder.encode(value))
}

extension FramePreview {
    var legacyJSON: JSONValue {
        .object([
            "jpeg": .string(jpeg.base64EncodedString()),
            "width": .int(Int64(width)), "height": .int(Int64(height)),
            "box": box.map(\.legacyJSON) ?? .null,
            "landmarks": .array(landmarks.map { .object(["x": .int(Int64($0.x)), "y": .int(Int64($0.y))]) }),
            "fingers": .array(fingers.map(\.legacyJSON)),
        ])
    }
}

extension ModelStatus {
    var legacyJSONValue: JSONValue {
        .object(["loaded": .array(loaded.map { .string($0) }), "missing": .array(missing.map { .string($0) }),
                 "corrupt": .array(corrupt.map { .string($0) }), "folders": .array(folders.map { .string($0) })])
    }
}

extension GalleryStatus {
    var legacyJSONValue: JSONValue {
        .object(["state": .string(state), "templates": .int(Int64(templates)), "loaded": .int(Int64(loaded)),
                 "total": .int(Int64(total)), "refreshing": .bool(refreshing)])
    }
}

extension DaemonStatus {
    var legacyJSONValue: JSONValue {
        var o: [String: JSONValue] = [
            "version": .string(version), "uptime_s": .double(uptimeS), "pid": .int(Int64(pid)),
            "cameras": .array(cameras.map { .string($0) }), "models": models.legacyJSONValue, "users": .int(Int64(users)),
            "active_sessions": .int(Int64(activeSessions)), "clients": .int(Int64(clients)),
            "socket_activated": .bool(socketActivated), "privileged": .bool(privileged),
        ]
        if let faceGallery { o["face_gallery"] = faceGallery.legacyJSONValue }
        if let store {
            var s: [String: JSONValue] = ["state": .string(store.state)]
            if let key = store.key { s["key"] = .string(key) }
            if let protection = store.protection { s["protection"] = .string(protection) }
            if let message = store.message { s["message"] = .string(message) }
            o["store"] = .object(s)
        }
        return .object(o)
    }
}

/// RPCCodec.event as it was: the payload's hand-written fields with `request` and `type`.
func legacyEventLine(request: RequestID, type: String, fields: [String: JSONValue]) -> Data {
    var params = fields
    params["request"] = request.json
    params["type"] = .string(type)
    var out = JSONWriter.write(.object(["jsonrpc": "2.0", "method": "event", "params": .object(params)]))
    out.append(UInt8(ascii: "\n"))
    return Data(out)
}

/// RPCCodec.response as it was for a result: its hand-written writer, else JSONEncoder.
func legacyResponse(id: RequestID, encoded: Data) throws -> Data {
    var out = Data(#"{"id":"#.utf8)
    switch id {
    case .int(let i): out.append(contentsOf: String(i).utf8)
    case .null: out.append(contentsOf: "null".utf8)
    case .string: out.append(try JSONCoding.encoder.encode(id))
    }
    out.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
    out.append(encoded)
    out.append(contentsOf: "}\n".utf8)
    return out
}
