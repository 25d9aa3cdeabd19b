import Foundation
func runPrintBench(_ arguments: [String]) { print("print bench: not yet written"); exit(2) }
