"""shiftlearn.federated"""
