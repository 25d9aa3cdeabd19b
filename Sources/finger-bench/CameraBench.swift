import Foundation
func runCameraBench(_ arguments: [String]) { print("camera bench: not yet written"); exit(2) }
