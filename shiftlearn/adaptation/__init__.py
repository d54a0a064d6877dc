"""shiftlearn.adaptation"""
