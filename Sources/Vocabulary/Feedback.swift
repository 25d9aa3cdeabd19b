/// What the person should do: the `feedback` codes of face.frame (a list) and finger.frame (one).
public enum Feedback: String, WireEnum {
    // face.frame
    case noFace = "no_face"
    case multipleFaces = "multiple_faces"
    case moveCloser = "move_closer"
    case moveBack = "move_back"
    case centerFace = "center_face"
    case tooDark = "too_dark"
    case tooBright = "too_bright"
    case blurry
    case faceForward = "face_forward"
    case turnLeft = "turn_left"
    case turnRight = "turn_right"
    case lookUp = "look_up"
    case lookDown = "look_down"
    // finger.frame
    case noFingers = "no_fingers"
    case tooClose = "too_close"
    case tooFar = "too_far"
    case optimal
    // Fingers found but their ridges not resolved yet (under ~4 pixels per ridge): move_closer,
    // shared with face.frame above.
    /// Ridges should be resolved at this distance but are smeared: the hand moved.
    case holdStill = "hold_still"
    /// Ridges should be resolved at this distance but are not: out of focus (or not a finger).
    case focus
    /// The back of the hand (or the other hand) is toward the camera.
    case showPalm = "show_palm"
}
